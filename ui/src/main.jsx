import { render } from 'preact';

import { App } from './app.jsx';
import './styles.css';

const root = document.getElementById('app');
root.textContent = ''; // The boot message, shown until this script runs.
render(<App />, root);
