// Reads an AWS shared-credentials file (carve's <data-dir>/credentials) in the browser, so a
// user can pick a profile instead of pasting keys. The file is read locally (FileReader) and
// never sent anywhere; only the chosen profile's keys are used, to derive the signing key.
//
//   [default]
//   aws_access_key_id = AKIA...
//   aws_secret_access_key = ...
//   carve_account_id = 123456789012
//
// Returns {profiles: [{profile, accessKeyId, secretAccessKey, accountId}], problems}. Sections
// without aws_access_key_id are skipped, as the server skips them.

export function parseCredentialsFile(text) {
  const profiles = [];
  const problems = [];
  let current = null;
  const finish = () => {
    if (!current) return;
    if (!current.accessKeyId) return;
    if (!current.secretAccessKey) {
      problems.push(`[${current.profile}]: aws_access_key_id without aws_secret_access_key`);
      return;
    }
    profiles.push(current);
  };
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) return;
    const section = /^\[([^\]]+)\]$/.exec(line);
    if (section) {
      finish();
      current = { profile: section[1].trim(), accessKeyId: '', secretAccessKey: '', accountId: '' };
      return;
    }
    const eq = line.indexOf('=');
    if (eq < 0 || !current) {
      problems.push(`line ${i + 1}: expected "[profile]" or "key = value"`);
      return;
    }
    const key = line.slice(0, eq).trim().toLowerCase();
    const value = line.slice(eq + 1).trim();
    if (key === 'aws_access_key_id') current.accessKeyId = value;
    else if (key === 'aws_secret_access_key') current.secretAccessKey = value;
    else if (key === 'carve_account_id') current.accountId = value;
  });
  finish();
  return { profiles, problems };
}
