// The login form's checks, apart from the page so they run without a browser.

const ACCESS_KEY = /^[A-Z0-9]{16,128}$/;
const REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/;

// Problems with the form's fields, each naming the field, the value (never the secret's) and
// the rule.
export function loginProblems({ accessKeyId, secret, region }) {
  const out = [];
  if (!ACCESS_KEY.test(accessKeyId)) {
    out.push(`access key id "${accessKeyId}": must be 16 to 128 capital letters and digits (e.g. AKIA…)`);
  }
  if (!secret) out.push('secret access key: required');
  else if (/\s/.test(secret)) out.push('secret access key: must not contain spaces or line breaks');
  if (!REGION.test(region)) out.push(`region "${region}": must look like us-east-1`);
  return out;
}
