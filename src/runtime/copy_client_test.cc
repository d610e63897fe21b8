// CopyClient against scripted copies on loopback: raw sockets that answer exactly as told, so
// that connection reuse, a copy that closed its idle connection, and the framings an answer can
// arrive in are each pinned down.
#include "runtime/copy_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/scripted_copy.h"

namespace carve::runtime {
namespace {

using namespace std::chrono_literals;

const std::string kOk =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok";

CopyRequest Request(std::string body = "{}") {
  CopyRequest r;
  r.body = std::move(body);
  r.content_type = "application/json";
  r.timeout = 5s;
  return r;
}

// Call and AsyncCall keep the same contract; each case runs both ways.
class CopyClientCall : public ::testing::TestWithParam<bool> {
 protected:
  CopyReply Call(CopyClient& client, const std::string& address, const CopyRequest& request) {
    if (!GetParam()) return client.Call(address, request);
    std::promise<CopyReply> reply;
    client.AsyncCall(address, request, [&](CopyReply r) { reply.set_value(std::move(r)); });
    return reply.get_future().get();
  }
};
INSTANTIATE_TEST_SUITE_P(SyncAndAsync, CopyClientCall, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Async" : "Sync"; });

TEST_P(CopyClientCall, SendsTheRequestAndReusesTheConnectionForTheNextCall) {
  std::vector<std::string> seen;
  std::mutex mu;
  ScriptedCopy copy([&](int fd, int) {
    for (std::string req; !(req = ReadRequest(fd)).empty();) {
      {
        std::lock_guard lock(mu);
        seen.push_back(req);
      }
      WriteAll(fd, kOk);
    }
  });
  CopyClient client;
  for (int i = 0; i < 3; ++i) {
    CopyReply reply = Call(client, copy.address(), Request(R"({"i":)" + std::to_string(i) + "}"));
    ASSERT_EQ(reply.outcome, CopyOutcome::kOk) << reply.detail;
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.body, "ok");
    EXPECT_EQ(reply.content_type, "text/plain");
  }
  EXPECT_EQ(copy.connections(), 1);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_NE(seen[0].find("POST /invocations HTTP/1.1\r\n"), std::string::npos) << seen[0];
  EXPECT_NE(seen[0].find("Content-Type: application/json\r\n"), std::string::npos) << seen[0];
  EXPECT_NE(seen[2].find(R"({"i":2})"), std::string::npos) << seen[2];
}

TEST_P(CopyClientCall, ResendsOnAFreshConnectionWhenTheCopyClosedTheIdleOne) {
  // Answers one request per connection as keep-alive, then closes: the pooled connection is
  // dead by the next call, which must still succeed.
  ScriptedCopy copy([](int fd, int) {
    if (!ReadRequest(fd).empty()) WriteAll(fd, kOk);
  });
  CopyClient client;
  ASSERT_EQ(Call(client, copy.address(), Request()).outcome, CopyOutcome::kOk);
  // The copy has closed the connection the client now holds idle in its pool.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (copy.closed() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(copy.closed(), 1);
  CopyReply second = Call(client, copy.address(), Request());
  EXPECT_EQ(second.outcome, CopyOutcome::kOk) << second.detail;
  EXPECT_EQ(second.body, "ok");
  EXPECT_EQ(copy.connections(), 2);
}

TEST_P(CopyClientCall, AFreshConnectionClosedWithoutAnAnswerIsBrokenNotRetried) {
  ScriptedCopy copy([](int fd, int) { ReadRequest(fd); });  // Reads, then hangs up.
  CopyClient client;
  CopyReply reply = Call(client, copy.address(), Request());
  EXPECT_EQ(reply.outcome, CopyOutcome::kBroken);
  EXPECT_FALSE(reply.detail.empty());
  EXPECT_EQ(copy.connections(), 1);
}

TEST_P(CopyClientCall, ChunkedAndCloseDelimitedBodiesAreReadWhole) {
  ScriptedCopy copy([](int fd, int connection) {
    if (ReadRequest(fd).empty()) return;
    if (connection == 0) {
      WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
      std::this_thread::sleep_for(10ms);
      WriteAll(fd, "2\r\nde\r\n0\r\n\r\n");
      ReadRequest(fd);  // Keeps the connection for the next call... which must not come here.
    } else {
      WriteAll(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-eof");
    }
  });
  CopyClient client;
  CopyReply chunked = Call(client, copy.address(), Request());
  ASSERT_EQ(chunked.outcome, CopyOutcome::kOk) << chunked.detail;
  EXPECT_EQ(chunked.body, "abcde");
  client.Forget(copy.address());  // The next call opens connection 1.
  CopyReply to_eof = Call(client, copy.address(), Request());
  ASSERT_EQ(to_eof.outcome, CopyOutcome::kOk) << to_eof.detail;
  EXPECT_EQ(to_eof.body, "until-eof");
}

TEST(CopyClient, StreamHandsOverEachChunkAsItArrives) {
  std::atomic<bool> release{false};
  ScriptedCopy copy([&](int fd, int) {
    if (ReadRequest(fd).empty()) return;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n");
    while (!release) std::this_thread::sleep_for(1ms);
    WriteAll(fd, "6\r\nsecond\r\n0\r\n\r\n");
  });
  CopyClient client;
  std::vector<std::string> chunks;
  int heads = 0;
  CopyReply reply = client.Stream(
      copy.address(), Request(),
      [&](const CopyReply& head) {
        ++heads;
        EXPECT_EQ(head.status, 200);
        return true;
      },
      [&](std::string_view data) {
        chunks.emplace_back(data);
        release = true;  // The second chunk is only sent once the first was handed over.
        return true;
      });
  ASSERT_EQ(reply.outcome, CopyOutcome::kOk) << reply.detail;
  EXPECT_EQ(heads, 1);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0], "first");
  EXPECT_EQ(chunks[1], "second");
  EXPECT_TRUE(reply.body.empty()) << "a streamed 2xx body is not buffered";
}

TEST(CopyClient, AStreamStoppedByTheCallerIsAborted) {
  ScriptedCopy copy([](int fd, int) {
    if (ReadRequest(fd).empty()) return;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n");
    std::this_thread::sleep_for(50ms);
  });
  CopyClient client;
  CopyReply reply = client.Stream(
      copy.address(), Request(), [](const CopyReply&) { return true; },
      [](std::string_view) { return false; });
  EXPECT_EQ(reply.outcome, CopyOutcome::kAborted);
}

TEST(CopyClient, AStreamWhoseHeadersTheCallerRefusesIsAborted) {
  ScriptedCopy copy([](int fd, int) {
    if (ReadRequest(fd).empty()) return;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n");
  });
  CopyClient client;
  int chunks = 0;
  CopyReply reply = client.Stream(
      copy.address(), Request(), [](const CopyReply&) { return false; },
      [&](std::string_view) {
        ++chunks;
        return true;
      });
  EXPECT_EQ(reply.outcome, CopyOutcome::kAborted);
  EXPECT_EQ(reply.detail, "the caller stopped reading");
  EXPECT_EQ(chunks, 0);
}

// An answer that comes after the deadline is not read: the call timed out, however soon after.
TEST_P(CopyClientCall, AnAnswerAfterTheDeadlineIsATimeout) {
  ScriptedCopy copy([](int fd, int) {
    if (ReadRequest(fd).empty()) return;
    std::this_thread::sleep_for(150ms);
    WriteAll(fd, kOk);
  });
  CopyClient client;
  CopyRequest req = Request();
  req.timeout = 100ms;
  CopyReply reply = Call(client, copy.address(), req);
  EXPECT_EQ(reply.outcome, CopyOutcome::kTimedOut) << reply.body;
}

TEST_P(CopyClientCall, ASilentCopyTimesOut) {
  std::atomic<bool> done{false};
  ScriptedCopy copy([&](int fd, int) {
    ReadRequest(fd);
    while (!done) std::this_thread::sleep_for(1ms);
  });
  CopyClient client;
  CopyRequest req = Request();
  req.timeout = 100ms;
  CopyReply reply = Call(client, copy.address(), req);
  done = true;
  EXPECT_EQ(reply.outcome, CopyOutcome::kTimedOut);
}

TEST_P(CopyClientCall, ARefusedConnectionIsConnectFailed) {
  std::string address;
  {
    ScriptedCopy gone([](int, int) {});
    address = gone.address();
  }
  CopyClient client;
  CopyReply reply = Call(client, address, Request());
  EXPECT_EQ(reply.outcome, CopyOutcome::kConnectFailed);
  EXPECT_NE(reply.detail.find("refused"), std::string::npos) << reply.detail;
}

}  // namespace
}  // namespace carve::runtime
