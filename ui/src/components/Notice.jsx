// A problem the page must not hide: an API error, or server data that breaks its contract.

export function Notice({ kind = 'error', title, items = [], children }) {
  if (!items.length && !children) return null;
  return (
    <div class={`notice notice-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {title && <strong>{title}</strong>}
      {children}
      {items.length > 0 && (
        <ul>
          {items.slice(0, 20).map((m) => (
            <li key={m}>{m}</li>
          ))}
          {items.length > 20 && <li>… and {items.length - 20} more</li>}
        </ul>
      )}
    </div>
  );
}

export function ApiErrorNotice({ error, what }) {
  if (!error) return null;
  return (
    <Notice title={`${what}: ${error.type ?? 'error'}${error.status ? ` (HTTP ${error.status})` : ''}`}>
      <p>{error.message}</p>
    </Notice>
  );
}
