"""Revoking one endpoint bearer token with `carve token revoke` (docs/security.md, "Revoking a
bearer token"): of two tokens for one endpoint, the revoked one is refused on the OpenAI route
at once (401) and after a restart, the other still works; another account cannot revoke it; and a
token with a byte appended is refused."""

import json
import subprocess
import unittest
import urllib.error
import urllib.request

from carve_harness import SEED_LAYOUT, CarveServer, carve_bin, component_spec, poll, seed_variant

MESSAGES = [{"role": "user", "content": "hello carve"}]


class TokenRevokeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer().start_with_second_account("b", "222222222222")
        try:
            sm = cls.server.client()
            sm.create_model(ModelName="m", PrimaryContainer={"Image": "carve/testmodel"})
            sm.create_endpoint_config(EndpointConfigName="ep",
                                      ProductionVariants=[seed_variant(SEED_LAYOUT)])
            sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
            sm.get_waiter("endpoint_in_service").wait(
                EndpointName="ep", WaiterConfig={"Delay": 1, "MaxAttempts": 90})
            sm.create_inference_component(
                InferenceComponentName="ic", EndpointName="ep", VariantName="AllTraffic",
                Specification=component_spec("m", "mig-1g.5gb", memory_mb=1024),
                RuntimeConfig={"CopyCount": 1})
            poll(lambda: sm.describe_inference_component(
                InferenceComponentName="ic")["RuntimeConfig"]["CurrentCopyCount"] == 1,
                timeout_s=90, what="ic serving")
        except Exception:
            cls.server.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def carve(self, *args, profile="default"):
        return subprocess.run(
            [carve_bin(), "token", *args, "--credentials", self.server.credentials_file,
             "--profile", profile, "--endpoint-url", self.server.url],
            capture_output=True, text=True, timeout=30)

    def mint(self, expires_in):
        """A token for endpoint ep; tokens minted in the same second differ by their lifetime."""
        out = self.carve("--endpoint", "ep", "--expires-in", str(expires_in))
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout.strip()

    def chat(self, token):
        """(status, the OpenAI-shaped error code or None)."""
        req = urllib.request.Request(
            f"{self.server.url}/endpoints/ep/openai/v1/chat/completions",
            data=json.dumps({"model": "ic", "messages": MESSAGES, "max_tokens": 2}).encode(),
            headers={"Content-Type": "application/json", "Authorization": "Bearer " + token},
            method="POST")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                r.read()
                return r.status, None
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())["error"]["code"]

    def test_a_revoked_token_is_refused_at_once_and_the_other_still_works(self):
        revoked, kept = self.mint(3600), self.mint(3599)
        self.assertEqual(self.chat(revoked), (200, None))
        self.assertEqual(self.chat(kept), (200, None))
        out = self.carve("revoke", revoked)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("revoked", out.stdout)
        self.assertEqual(self.chat(revoked), (401, "UnrecognizedClientException"))
        self.assertEqual(self.chat(kept), (200, None))
        # Revoking again is no error; the key itself still mints tokens that work.
        self.assertEqual(self.carve("revoke", revoked).returncode, 0)
        self.assertEqual(self.chat(self.mint(3598)), (200, None))
        # The revocation is in the store: a restarted server still refuses the token.
        self.server.stop()
        self.server.start()
        self.assertEqual(self.chat(revoked), (401, "UnrecognizedClientException"))
        poll(lambda: self.chat(kept) == (200, None), timeout_s=60, what="ep serving again")

    def test_another_account_cannot_revoke_a_token(self):
        token = self.mint(3500)
        out = self.carve("revoke", token, profile="b")
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("only the account whose key minted a token may revoke it", out.stderr)
        self.assertNotIn(self.server.account_id(), out.stderr)
        status, body = self.server.signed("POST", "/v1/tokens/revoke", {"token": token},
                                          profile="b")
        self.assertEqual((status, body["code"]), (403, "AccessDeniedException"))
        self.assertEqual(self.chat(token), (200, None))

    def test_a_token_with_a_byte_appended_is_refused(self):
        token = self.mint(3400)
        self.assertEqual(self.chat(token + "A"), (401, "UnrecognizedClientException"))
        self.assertEqual(self.chat(token + "AAAA"), (401, "UnrecognizedClientException"))
        out = self.carve("revoke", token + "A")
        self.assertEqual(out.returncode, 2, out.stderr)  # Not a token: nothing to revoke.
        self.assertEqual(self.chat(token), (200, None))


if __name__ == "__main__":
    unittest.main()
