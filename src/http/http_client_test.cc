// HttpClient against scripted servers on loopback: raw sockets that answer exactly as told, so
// that connection reuse, a server that closed its idle connection, the framings an answer can
// arrive in, deadlines, and a stream's pause, resume and cancel are each pinned down.
#include "http/http_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/scripted_server.h"

namespace carve::http {
namespace {

using namespace std::chrono_literals;

const std::string kOk =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok";

ClientRequest Request(std::string body = "{}") {
  ClientRequest r;
  r.target = "/invocations";
  r.headers = {{"Content-Type", "application/json"}};
  r.body = std::move(body);
  r.timeout = 5s;
  return r;
}

ClientReply Call(HttpClient& client, const std::string& address, ClientRequest request) {
  std::promise<ClientReply> reply;
  client.Call(address, std::move(request), [&](ClientReply r) { reply.set_value(std::move(r)); });
  return reply.get_future().get();
}

// A server that answers every request on a connection with kOk, keeping each in `seen`.
ScriptedServer::Script AnswerEachRecording(std::vector<std::string>& seen, std::mutex& mu) {
  return [&seen, &mu](int fd, int) {
    for (std::string req; !(req = ReadRequest(fd)).empty();) {
      {
        std::lock_guard lock(mu);
        seen.push_back(req);
      }
      WriteAll(fd, kOk);
    }
  };
}

// A sink that records what it is handed and lets the test decide each chunk's flow.
class RecordingSink final : public StreamSink {
 public:
  bool refuse_head = false;
  std::function<Flow(std::string_view)> flow = [](std::string_view) { return Flow::kMore; };

  bool OnHead(const ClientReply& head) override {
    std::lock_guard lock(mu_);
    heads_.push_back(head.status);
    return !refuse_head;
  }
  Flow OnData(std::string_view data) override {
    {
      std::lock_guard lock(mu_);
      chunks_.emplace_back(data);
    }
    cv_.notify_all();
    return flow(data);
  }
  void OnEnd(ClientReply final) override {
    {
      std::lock_guard lock(mu_);
      final_ = std::move(final);
      ended_ = true;
    }
    cv_.notify_all();
  }
  ClientReply WaitEnd() {
    std::unique_lock lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, 10s, [&] { return ended_; })) << "the stream never ended";
    return final_;
  }
  bool WaitChunks(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return chunks_.size() >= n; });
  }
  std::vector<std::string> chunks() {
    std::lock_guard lock(mu_);
    return chunks_;
  }
  std::vector<int> heads() {
    std::lock_guard lock(mu_);
    return heads_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> heads_;
  std::vector<std::string> chunks_;
  bool ended_ = false;
  ClientReply final_;
};

TEST(HttpClient, SendsTheRequestAndReusesTheConnectionForTheNextCall) {
  std::vector<std::string> seen;
  std::mutex mu;
  ScriptedServer copy(AnswerEachRecording(seen, mu));
  HttpClient client;
  for (int i = 0; i < 3; ++i) {
    ClientReply reply = Call(client, copy.address(), Request(R"({"i":)" + std::to_string(i) + "}"));
    ASSERT_EQ(reply.outcome, ClientOutcome::kOk) << reply.detail;
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.body, "ok");
    EXPECT_EQ(reply.Header("content-type"), "text/plain");
  }
  EXPECT_EQ(copy.connections(), 1);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_NE(seen[0].find("POST /invocations HTTP/1.1\r\n"), std::string::npos) << seen[0];
  EXPECT_NE(seen[0].find("Content-Type: application/json\r\n"), std::string::npos) << seen[0];
  EXPECT_NE(seen[2].find(R"({"i":2})"), std::string::npos) << seen[2];
}

// A GET carries no body and so no Content-Type; a body without a type is octet-stream.
TEST(HttpClient, ABodyWithoutATypeIsOctetStreamAndAGetHasNeither) {
  std::vector<std::string> seen;
  std::mutex mu;
  ScriptedServer server(AnswerEachRecording(seen, mu));
  HttpClient client;
  ClientRequest get;
  get.method = "GET";
  get.target = "/v1/agent/desired?node=a";
  ASSERT_EQ(Call(client, server.address(), get).outcome, ClientOutcome::kOk);
  ClientRequest post;
  post.body = "bytes";
  ASSERT_EQ(Call(client, server.address(), post).outcome, ClientOutcome::kOk);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].rfind("GET /v1/agent/desired?node=a HTTP/1.1\r\n", 0), 0u) << seen[0];
  EXPECT_EQ(seen[0].find("Content-Type"), std::string::npos) << seen[0];
  EXPECT_NE(seen[1].find("Content-Type: application/octet-stream\r\n"), std::string::npos)
      << seen[1];
}

// A signed request carries the Host it was signed for; the client sends that one, once.
TEST(HttpClient, AGivenHostReplacesTheAddress) {
  std::string seen;
  std::mutex mu;
  ScriptedServer server([&](int fd, int) {
    std::string req = ReadRequest(fd);
    {
      std::lock_guard lock(mu);
      seen = req;
    }
    WriteAll(fd, kOk);
  });
  HttpClient client;
  ClientRequest req = Request();
  req.headers.emplace_back("Host", "carve.example:8443");
  ASSERT_EQ(Call(client, server.address(), req).outcome, ClientOutcome::kOk);
  std::lock_guard lock(mu);
  EXPECT_NE(seen.find("Host: carve.example:8443\r\n"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("Host:", seen.find("Host:") + 1), std::string::npos) << seen;
}

TEST(HttpClient, ACancelledCallEndsAborted) {
  std::atomic<bool> done{false};
  ScriptedServer server([&](int fd, int) {
    ReadRequest(fd);
    while (!done) std::this_thread::sleep_for(1ms);
  });
  HttpClient client;
  std::promise<ClientReply> reply;
  auto handle = client.Call(server.address(), Request(),
                            [&](ClientReply r) { reply.set_value(std::move(r)); });
  std::this_thread::sleep_for(20ms);
  handle->Cancel();
  EXPECT_EQ(reply.get_future().get().outcome, ClientOutcome::kAborted);
  done = true;
}

TEST(HttpClient, ResendsOnAFreshConnectionWhenTheServerClosedTheIdleOne) {
  // Answers one request per connection as keep-alive, then closes: the pooled connection is
  // dead by the next call, which must still succeed.
  ScriptedServer copy([](int fd, int) {
    if (!ReadRequest(fd).empty()) WriteAll(fd, kOk);
  });
  HttpClient client;
  ASSERT_EQ(Call(client, copy.address(), Request()).outcome, ClientOutcome::kOk);
  // The server has closed the connection the client now holds idle in its pool.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (copy.closed() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(copy.closed(), 1);
  ClientReply second = Call(client, copy.address(), Request());
  EXPECT_EQ(second.outcome, ClientOutcome::kOk) << second.detail;
  EXPECT_EQ(second.body, "ok");
  EXPECT_EQ(copy.connections(), 2);
}

TEST(HttpClient, AFreshConnectionClosedWithoutAnAnswerIsBrokenNotRetried) {
  ScriptedServer copy([](int fd, int) { ReadRequest(fd); });  // Reads, then hangs up.
  HttpClient client;
  ClientReply reply = Call(client, copy.address(), Request());
  EXPECT_EQ(reply.outcome, ClientOutcome::kBroken);
  EXPECT_FALSE(reply.detail.empty());
  EXPECT_EQ(copy.connections(), 1);
}

TEST(HttpClient, ChunkedAndCloseDelimitedBodiesAreReadWhole) {
  ScriptedServer copy([](int fd, int connection) {
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
  HttpClient client;
  ClientReply chunked = Call(client, copy.address(), Request());
  ASSERT_EQ(chunked.outcome, ClientOutcome::kOk) << chunked.detail;
  EXPECT_EQ(chunked.body, "abcde");
  client.Forget(copy.address());  // The next call opens connection 1.
  ClientReply to_eof = Call(client, copy.address(), Request());
  ASSERT_EQ(to_eof.outcome, ClientOutcome::kOk) << to_eof.detail;
  EXPECT_EQ(to_eof.body, "until-eof");
}

// An answer that comes after the deadline is not read: the call timed out, however soon after.
TEST(HttpClient, AnAnswerAfterTheDeadlineIsATimeout) {
  ScriptedServer copy([](int fd, int) {
    if (ReadRequest(fd).empty()) return;
    std::this_thread::sleep_for(150ms);
    WriteAll(fd, kOk);
  });
  HttpClient client;
  ClientRequest req = Request();
  req.timeout = 100ms;
  ClientReply reply = Call(client, copy.address(), req);
  EXPECT_EQ(reply.outcome, ClientOutcome::kTimedOut) << reply.body;
}

TEST(HttpClient, ARefusedConnectionIsConnectFailed) {
  std::string address;
  {
    ScriptedServer gone([](int, int) {});
    address = gone.address();
  }
  HttpClient client;
  ClientReply reply = Call(client, address, Request());
  EXPECT_EQ(reply.outcome, ClientOutcome::kConnectFailed);
  EXPECT_NE(reply.detail.find("refused"), std::string::npos) << reply.detail;
}

TEST(HttpClient, AStreamHandsOverEachChunkAsItArrives) {
  std::atomic<bool> release{false};
  ScriptedServer copy([&](int fd, int) {
    if (ReadRequest(fd).empty()) return;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n");
    while (!release) std::this_thread::sleep_for(1ms);
    WriteAll(fd, "6\r\nsecond\r\n0\r\n\r\n");
  });
  HttpClient client;
  auto sink = std::make_shared<RecordingSink>();
  sink->flow = [&](std::string_view) {
    release = true;  // The second chunk is only sent once the first was handed over.
    return StreamSink::Flow::kMore;
  };
  auto stream = client.OpenStream(copy.address(), Request(), sink);
  ClientReply reply = sink->WaitEnd();
  ASSERT_EQ(reply.outcome, ClientOutcome::kOk) << reply.detail;
  EXPECT_EQ(sink->heads(), std::vector<int>{200});
  EXPECT_EQ(sink->chunks(), (std::vector<std::string>{"first", "second"}));
  EXPECT_TRUE(reply.body.empty()) << "a streamed 2xx body is not buffered";
}

TEST(HttpClient, AStreamsNon2xxBodyIsBufferedIntoTheEnd) {
  ScriptedServer copy([](int fd, int) {
    if (ReadRequest(fd).empty()) return;
    WriteAll(fd, "HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy");
  });
  HttpClient client;
  auto sink = std::make_shared<RecordingSink>();
  auto stream = client.OpenStream(copy.address(), Request(), sink);
  ClientReply reply = sink->WaitEnd();
  EXPECT_EQ(reply.outcome, ClientOutcome::kOk);
  EXPECT_EQ(reply.status, 503);
  EXPECT_EQ(reply.body, "busy");
  EXPECT_TRUE(sink->chunks().empty());
}

// Back-pressure: a paused stream reads nothing more (the server's writes fill the socket) until
// Resume(), and then every byte arrives in order.
TEST(HttpClient, APausedStreamReadsOnOnlyWhenResumed) {
  const std::string piece(64 * 1024, 'x');
  ScriptedServer copy([&](int fd, int) {
    if (ReadRequest(fd).empty()) return;
    WriteAll(fd,
             "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(piece.size() * 8) + "\r\n\r\n");
    for (int i = 0; i < 8; ++i) WriteAll(fd, piece);
  });
  HttpClient client;
  auto sink = std::make_shared<RecordingSink>();
  sink->flow = [](std::string_view) { return StreamSink::Flow::kPause; };
  auto stream = client.OpenStream(copy.address(), Request(), sink);
  ASSERT_TRUE(sink->WaitChunks(1));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(sink->chunks().size(), 1u) << "read on while paused";
  sink->flow = [](std::string_view) { return StreamSink::Flow::kMore; };
  stream->Resume();
  ClientReply reply = sink->WaitEnd();
  ASSERT_EQ(reply.outcome, ClientOutcome::kOk) << reply.detail;
  size_t total = 0;
  for (const auto& c : sink->chunks()) total += c.size();
  EXPECT_EQ(total, piece.size() * 8);
}

TEST(HttpClient, CancellingAPausedStreamEndsItAborted) {
  ScriptedServer copy([](int fd, int) {
    if (ReadRequest(fd).empty()) return;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n");
    std::this_thread::sleep_for(200ms);
  });
  HttpClient client;
  auto sink = std::make_shared<RecordingSink>();
  sink->flow = [](std::string_view) { return StreamSink::Flow::kPause; };
  auto stream = client.OpenStream(copy.address(), Request(), sink);
  ASSERT_TRUE(sink->WaitChunks(1));
  stream->Cancel();
  EXPECT_EQ(sink->WaitEnd().outcome, ClientOutcome::kAborted);
}

TEST(HttpClient, CancellingAStreamWaitingForItsHeadersEndsItAborted) {
  std::atomic<bool> done{false};
  ScriptedServer copy([&](int fd, int) {
    ReadRequest(fd);
    while (!done) std::this_thread::sleep_for(1ms);
  });
  HttpClient client;
  auto sink = std::make_shared<RecordingSink>();
  auto stream = client.OpenStream(copy.address(), Request(), sink);
  std::this_thread::sleep_for(20ms);
  stream->Cancel();
  ClientReply reply = sink->WaitEnd();
  done = true;
  EXPECT_EQ(reply.outcome, ClientOutcome::kAborted);
  EXPECT_TRUE(sink->heads().empty());
}

TEST(HttpClient, AStreamStoppedByItsSinkIsAborted) {
  ScriptedServer copy([](int fd, int) {
    if (ReadRequest(fd).empty()) return;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n");
    std::this_thread::sleep_for(50ms);
  });
  HttpClient client;
  auto sink = std::make_shared<RecordingSink>();
  sink->flow = [](std::string_view) { return StreamSink::Flow::kStop; };
  auto stream = client.OpenStream(copy.address(), Request(), sink);
  EXPECT_EQ(sink->WaitEnd().outcome, ClientOutcome::kAborted);
}

TEST(HttpClient, AStreamWhoseHeadersTheSinkRefusesIsAborted) {
  ScriptedServer copy([](int fd, int) {
    if (ReadRequest(fd).empty()) return;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n");
  });
  HttpClient client;
  auto sink = std::make_shared<RecordingSink>();
  sink->refuse_head = true;
  auto stream = client.OpenStream(copy.address(), Request(), sink);
  ClientReply reply = sink->WaitEnd();
  EXPECT_EQ(reply.outcome, ClientOutcome::kAborted);
  EXPECT_EQ(reply.detail, "the caller stopped reading");
  EXPECT_TRUE(sink->chunks().empty());
}

// A stream's deadline is per read: one that keeps producing outlives its timeout, one that
// falls silent for longer times out.
TEST(HttpClient, AStreamTimesOutOnlyWhenItFallsSilent) {
  std::atomic<bool> done{false};
  ScriptedServer copy([&](int fd, int) {
    if (ReadRequest(fd).empty()) return;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 6; ++i) {
      WriteAll(fd, "1\r\na\r\n");
      std::this_thread::sleep_for(40ms);
    }
    while (!done) std::this_thread::sleep_for(1ms);  // Then silence.
  });
  HttpClient client;
  auto sink = std::make_shared<RecordingSink>();
  ClientRequest req = Request();
  req.timeout = 150ms;  // Shorter than the whole stream (240 ms), longer than each gap.
  auto stream = client.OpenStream(copy.address(), req, sink);
  ClientReply reply = sink->WaitEnd();
  done = true;
  EXPECT_EQ(reply.outcome, ClientOutcome::kTimedOut);
  EXPECT_EQ(sink->chunks().size(), 6u);
}

// fleet-sim's way: the client on a loop the caller runs, its callbacks on that loop's thread.
TEST(HttpClient, RunsOnTheCallersLoop) {
  ScriptedServer server([](int fd, int) {
    for (std::string req; !(req = ReadRequest(fd)).empty();) WriteAll(fd, kOk);
  });
  boost::asio::io_context io;
  ClientReply reply;
  std::thread::id ran_on;
  {
    HttpClient client({.io = &io});
    client.Call(server.address(), Request(), [&](ClientReply r) {
      reply = std::move(r);
      ran_on = std::this_thread::get_id();
    });
    io.run();
  }
  EXPECT_EQ(reply.outcome, ClientOutcome::kOk) << reply.detail;
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

}  // namespace
}  // namespace carve::http
