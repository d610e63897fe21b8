// The runtimes section of `carve server --config`: what it accepts, and the text it refuses
// with the field named.
#include "server/sagemaker/runtimes.h"

#include <gtest/gtest.h>

#include <string>

namespace carve::server::sagemaker {
namespace {

constexpr char kHead[] = "runtimes:\n  images:\n    - image: vllm/vllm-openai\n";

TEST(RuntimeConfig, AnImageListedReplacesTheBuiltInAndKeepsItsCommandAndEnvironment) {
  auto c = ParseRuntimeConfig(std::string(kHead) +
                              "      command: [vllm, serve, \"{model_data}\", --port, \"{port}\"]\n"
                              "      environment: {VLLM_LOGGING_LEVEL: INFO}\n"
                              "  default_runtime: vllm/vllm-openai\n");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  const Runtime* r = c->Find("vllm/vllm-openai");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->command,
            (std::vector<std::string>{"vllm", "serve", "{model_data}", "--port", "{port}"}));
  EXPECT_EQ(r->environment.at("VLLM_LOGGING_LEVEL"), "INFO");
  EXPECT_EQ(c->default_runtime, "vllm/vllm-openai");
}

// yaml-cpp decodes "\_" and "\N" to the lone bytes A0 and 85 and "\0" to a NUL: valid YAML
// text whose values are not, and would go out in the agents' JSON and argv.
TEST(RuntimeConfig, AnEscapeThatDecodesToAByteThatIsNotTextIsRefusedNamingTheField) {
  struct Case {
    std::string yaml;
    std::string field;
  };
  const Case cases[] = {
      {std::string(kHead) + "      command: [vllm, \"{model\\_data}\"]\n",
       "runtimes.images[0].command[1]: byte 6 "},
      {std::string(kHead) + "      command: [vllm]\n      environment: {A: \"x\\Ny\"}\n",
       "runtimes.images[0].environment.A: byte 1 "},
      {std::string(kHead) + "      command: [vllm]\n      environment: {\"A\\0\": x}\n",
       "runtimes.images[0].environment: byte 1 "},
      {"runtimes:\n  images:\n    - image: \"vllm\\_x\"\n      command: [vllm]\n",
       "runtimes.images[0].image: byte 4 "},
      {std::string(kHead) + "      command: [vllm]\n  default_runtime: \"a\\Nb\"\n",
       "runtimes.default_runtime: byte 1 "},
  };
  for (const Case& c : cases) {
    auto r = ParseRuntimeConfig(c.yaml);
    ASSERT_FALSE(r.has_value()) << c.yaml;
    EXPECT_EQ(r.error().message.rfind(c.field, 0), 0u) << r.error().message;
    EXPECT_NE(r.error().message.find("is not UTF-8 text"), std::string::npos);
  }
  // The character itself, and YAML's \u escape for it, are text.
  EXPECT_TRUE(
      ParseRuntimeConfig(std::string(kHead) + "      command: [\"a\\u00a0b\", \"a\u00a0b\"]\n")
          .has_value());
}

}  // namespace
}  // namespace carve::server::sagemaker
