// A SageMaker serving container reduced to what carve's container contract promises, built
// static into an image FROM scratch by container_test.py (no registry is reachable). Run as
// `serve` it listens on $SAGEMAKER_BIND_TO_PORT (default 8080), answers GET /ping, and answers
// POST /invocations with what it was given: its argument, the GPU variables, the variable a
// test CDI spec's device sets, the model data under /opt/ml/model with whether it can be
// written, and its own uid with whether it can write its image's root directory. Any other
// argument: exit 2, as a serving image does when not told to serve.
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void Stop(int sig) {
  (void)sig;
  _exit(0);  // PID 1 of a container: without a handler SIGTERM would be ignored.
}

// Appends `name` and its value (or null) to `out` as a JSON member; values here are plain.
static void Member(char* out, size_t size, const char* name, const char* value, int last) {
  size_t n = strlen(out);
  if (value == NULL) {
    snprintf(out + n, size - n, "\"%s\": null%s", name, last ? "" : ", ");
  } else {
    snprintf(out + n, size - n, "\"%s\": \"%s\"%s", name, value, last ? "" : ", ");
  }
}

static void Answer(int fd, int status, const char* body) {
  char head[256];
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                   "Connection: close\r\n\r\n",
                   status, status == 200 ? "OK" : "Not Found", strlen(body));
  if (write(fd, head, (size_t)n) < 0 || write(fd, body, strlen(body)) < 0) return;
}

static void Invocation(int fd, const char* arg) {
  char model[128] = "";
  int in = open("/opt/ml/model/weights.txt", O_RDONLY);
  if (in >= 0) {
    ssize_t got = read(in, model, sizeof model - 1);
    model[got > 0 ? got : 0] = '\0';
    model[strcspn(model, "\r\n")] = '\0';
    close(in);
  }
  int probe = open("/opt/ml/model/written-by-container", O_WRONLY | O_CREAT, 0644);
  const char* writable = probe >= 0 ? "yes" : (errno == EROFS ? "read-only" : strerror(errno));
  if (probe >= 0) close(probe);
  // The image's root filesystem belongs to the image's root: writable by a program that runs as
  // that root (in a user namespace, on a node that sandboxes), not by an arbitrary uid.
  int root_probe = open("/written-by-the-image-root", O_WRONLY | O_CREAT, 0644);
  const char* root_writable = root_probe >= 0 ? "yes" : strerror(errno);
  if (root_probe >= 0) close(root_probe);
  char uid[16];
  snprintf(uid, sizeof uid, "%u", (unsigned)getuid());
  char body[2048] = "{";
  Member(body, sizeof body, "argument", arg, 0);
  Member(body, sizeof body, "CUDA_VISIBLE_DEVICES", getenv("CUDA_VISIBLE_DEVICES"), 0);
  Member(body, sizeof body, "SAGEMAKER_BIND_TO_PORT", getenv("SAGEMAKER_BIND_TO_PORT"), 0);
  Member(body, sizeof body, "CARVE_TEST_CDI_DEVICE", getenv("CARVE_TEST_CDI_DEVICE"), 0);
  Member(body, sizeof body, "MODEL_VARIABLE", getenv("MODEL_VARIABLE"), 0);
  Member(body, sizeof body, "model", in >= 0 ? model : NULL, 0);
  Member(body, sizeof body, "model_writable", writable, 0);
  Member(body, sizeof body, "uid", uid, 0);
  Member(body, sizeof body, "root_writable", root_writable, 1);
  strncat(body, "}", sizeof body - strlen(body) - 1);
  Answer(fd, 200, body);
}

int main(int argc, char** argv) {
  if (argc < 2 || strcmp(argv[1], "serve") != 0) {
    fprintf(stderr, "serve: run me as `serve` (got %s)\n", argc < 2 ? "no argument" : argv[1]);
    return 2;
  }
  signal(SIGTERM, Stop);
  signal(SIGINT, Stop);
  const char* port = getenv("SAGEMAKER_BIND_TO_PORT");
  int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((unsigned short)atoi(port != NULL ? port : "8080"));
  if (bind(s, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(s, 64) != 0) {
    perror("serve: bind");
    return 1;
  }
  fprintf(stderr, "serve: listening on %s\n", port != NULL ? port : "8080");
  for (;;) {
    int fd = accept(s, NULL, NULL);
    if (fd < 0) continue;
    char request[65536];
    size_t have = 0;
    // The request line and headers, then as much body as Content-Length says.
    char* end = NULL;
    while (have < sizeof request - 1 && end == NULL) {
      ssize_t got = read(fd, request + have, sizeof request - 1 - have);
      if (got <= 0) break;
      have += (size_t)got;
      request[have] = '\0';
      end = strstr(request, "\r\n\r\n");
    }
    if (end != NULL) {
      const char* length = strcasestr(request, "\r\ncontent-length:");
      size_t want =
          (size_t)(end + 4 - request) + (length != NULL ? strtoul(length + 17, NULL, 10) : 0);
      while (have < want && have < sizeof request - 1) {
        ssize_t got = read(fd, request + have, sizeof request - 1 - have);
        if (got <= 0) break;
        have += (size_t)got;
      }
      if (strncmp(request, "GET /ping ", 10) == 0) {
        Answer(fd, 200, "{}");
      } else if (strncmp(request, "POST /invocations ", 18) == 0) {
        Invocation(fd, argv[1]);
      } else {
        Answer(fd, 404, "{\"error\": \"no such route\"}");
      }
    }
    close(fd);
  }
}
