#include "app/server_certificate.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "protocol/server_trust.h"

namespace carve::app {
namespace {
namespace fs = std::filesystem;
using std::chrono::hours;

std::string ReadAll(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

using Cert = std::unique_ptr<X509, decltype(&X509_free)>;

Cert Parse(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  return Cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), &X509_free);
}

mode_t Mode(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 0777;
}

class ServerCertificateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string t = (fs::temp_directory_path() / "carve-tls-XXXXXX").string();
    ASSERT_NE(mkdtemp(t.data()), nullptr);
    root_ = t;
    dir_ = root_ / "tls";
  }
  void TearDown() override { fs::remove_all(root_); }
  ServerCertificate Ensure(const std::vector<std::string>& names, CertificateOptions o = {}) {
    auto c = EnsureServerCertificate(dir_, names, o);
    EXPECT_TRUE(c.has_value()) << c.error().message;
    return c.value_or(ServerCertificate{});
  }
  fs::path root_;
  fs::path dir_;
  const std::vector<std::string> names_ = {"node7", "localhost", "127.0.0.1", "::1", "10.0.0.5"};
};

TEST_F(ServerCertificateTest, TheFirstStartWritesAPrivateKeyAndACertificateForEveryName) {
  const ServerCertificate c = Ensure(names_);
  EXPECT_EQ(c.origin, ServerCertificate::Origin::kGenerated);
  EXPECT_EQ(Mode(dir_), 0700u);
  EXPECT_EQ(Mode(c.key_file), 0600u);
  Cert cert = Parse(ReadAll(c.cert_file));
  ASSERT_TRUE(cert);
  EXPECT_EQ(c.pin, protocol::CertificatePin(cert.get()));
  EXPECT_EQ(X509_check_host(cert.get(), "node7", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "::1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "10.0.0.5", 0), 1);
  EXPECT_NE(X509_check_host(cert.get(), "other.example", 0, 0, nullptr), 1);
  // A server's own certificate, not a CA, valid for 825 days from about now.
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
  EXPECT_NE(X509_get_extended_key_usage(cert.get()) & XKU_SSL_SERVER, 0u);
  int days = 0;
  int seconds = 0;
  ASSERT_EQ(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(cert.get()),
                           X509_get0_notAfter(cert.get())),
            1);
  EXPECT_EQ(days, 825);  // 825 days and the hour notBefore starts early.
}

// What a client with --ca-bundle <data-dir>/tls/cert.pem does: trust the file as its anchor and
// check the name it dialled.
TEST_F(ServerCertificateTest, AClientTrustingTheFileAcceptsTheCertificateForEachName) {
  const ServerCertificate c = Ensure(names_);
  Cert cert = Parse(ReadAll(c.cert_file));
  ASSERT_TRUE(cert);
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), &X509_STORE_free);
  ASSERT_EQ(X509_STORE_add_cert(store.get(), cert.get()), 1);
  for (const char* ip : {"127.0.0.1", "::1", "10.0.0.5"}) {
    std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                        &X509_STORE_CTX_free);
    ASSERT_EQ(X509_STORE_CTX_init(ctx.get(), store.get(), cert.get(), nullptr), 1);
    X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
    X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT);
    ASSERT_EQ(X509_VERIFY_PARAM_set1_ip_asc(param, ip), 1);
    EXPECT_EQ(X509_verify_cert(ctx.get()), 1)
        << ip << ": " << X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()));
  }
}

TEST_F(ServerCertificateTest, ALaterStartReusesBothFilesUnchanged) {
  const ServerCertificate first = Ensure(names_);
  const std::string key = ReadAll(first.key_file);
  const std::string cert = ReadAll(first.cert_file);
  const ServerCertificate again = Ensure(names_);
  EXPECT_EQ(again.origin, ServerCertificate::Origin::kReused);
  EXPECT_EQ(again.pin, first.pin);
  EXPECT_EQ(ReadAll(again.key_file), key);
  EXPECT_EQ(ReadAll(again.cert_file), cert);
}

// A new name (--tls-san) needs a new certificate, but not a new key: every agent's pin holds.
TEST_F(ServerCertificateTest, ANewNameRenewsTheCertificateWithTheSameKeySoThePinHolds) {
  const ServerCertificate first = Ensure(names_);
  const std::string key = ReadAll(first.key_file);
  std::vector<std::string> more = names_;
  more.push_back("carve.example");
  const ServerCertificate renewed = Ensure(more);
  EXPECT_EQ(renewed.origin, ServerCertificate::Origin::kRenewed);
  EXPECT_NE(renewed.why_renewed.find("carve.example"), std::string::npos) << renewed.why_renewed;
  EXPECT_EQ(renewed.pin, first.pin);
  EXPECT_EQ(ReadAll(renewed.key_file), key);
  Cert cert = Parse(ReadAll(renewed.cert_file));
  EXPECT_EQ(X509_check_host(cert.get(), "carve.example", 0, 0, nullptr), 1);
}

TEST_F(ServerCertificateTest, ACertificateInItsLastMonthIsRenewedWithTheSameKey) {
  const ServerCertificate first = Ensure(names_);
  CertificateOptions later;
  later.now = std::chrono::system_clock::now() + hours(24 * 800);
  const ServerCertificate renewed = Ensure(names_, later);
  EXPECT_EQ(renewed.origin, ServerCertificate::Origin::kRenewed);
  EXPECT_NE(renewed.why_renewed.find("expires"), std::string::npos) << renewed.why_renewed;
  EXPECT_EQ(renewed.pin, first.pin);
}

TEST_F(ServerCertificateTest, ACertificateOfAnotherKeyIsReplacedAndTheKeyStays) {
  const ServerCertificate first = Ensure(names_);
  fs::path other = root_ / "other";
  auto foreign = EnsureServerCertificate(other, names_);
  ASSERT_TRUE(foreign.has_value());
  fs::copy_file(foreign->cert_file, first.cert_file, fs::copy_options::overwrite_existing);
  const ServerCertificate fixed = Ensure(names_);
  EXPECT_EQ(fixed.origin, ServerCertificate::Origin::kRenewed);
  EXPECT_EQ(fixed.pin, first.pin);
  EXPECT_NE(fixed.pin, foreign->pin);
}

TEST_F(ServerCertificateTest, AKeyReadableByOthersIsRefusedAndNothingIsRewritten) {
  const ServerCertificate first = Ensure(names_);
  const std::string cert = ReadAll(first.cert_file);
  fs::permissions(first.key_file, fs::perms::others_read, fs::perm_options::add);
  std::vector<std::string> more = names_;
  more.push_back("carve.example");
  auto refused = EnsureServerCertificate(dir_, more);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("chmod 600 " + first.key_file), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(ReadAll(first.cert_file), cert);
}

TEST_F(ServerCertificateTest, AKeyFileThatHoldsNoKeyIsRefusedNamingTheWayOut) {
  const ServerCertificate first = Ensure(names_);
  std::ofstream(first.key_file, std::ios::trunc) << "not a key\n";
  auto refused = EnsureServerCertificate(dir_, names_);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("is not a PEM private key"), std::string::npos);
  EXPECT_NE(refused.error().message.find("new pin"), std::string::npos);
}

TEST(SubjectAltNames, NameTheHostLoopbackAndTheListenAddressOnceEach) {
  auto names = SubjectAltNames("node7", "10.0.0.5", {"carve.example", "10.0.0.5", "LOCALHOST"});
  ASSERT_TRUE(names.has_value()) << names.error().message;
  EXPECT_EQ(*names, (std::vector<std::string>{"node7", "localhost", "127.0.0.1", "::1", "10.0.0.5",
                                              "carve.example"}));
}

TEST(SubjectAltNames, LeaveOutAWildcardListenAddress) {
  for (const char* any : {"0.0.0.0", "::", "[::]"}) {
    auto names = SubjectAltNames("node7", any, {});
    ASSERT_TRUE(names.has_value()) << names.error().message;
    EXPECT_EQ(names->size(), 4u) << any;
  }
}

TEST(SubjectAltNames, RefuseANameThatIsNeitherHostNorAddress) {
  auto names = SubjectAltNames("node7", "127.0.0.1", {"bad name,DNS:evil.example"});
  ASSERT_FALSE(names.has_value());
  EXPECT_EQ(names.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(names.error().message.find("--tls-san"), std::string::npos);
}

}  // namespace
}  // namespace carve::app
