// Metrics for Prometheus: a client whose ClientOptions::metrics is a PrometheusMetrics, and a
// small HTTP server (Boost.Beast) answering GET /metrics with its rendering. A background
// thread runs transactions, takes a lock and sends to an agent, so the page shows numbers.
//
//   AVOUT_ZOOKEEPER=127.0.0.1:2181 avout_example_metrics_server 9464
//   curl http://127.0.0.1:9464/metrics
//
// It serves until SIGINT or SIGTERM, then exits with 0. Port 0 picks a free one (printed).
#include <avout/avout.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <random>
#include <stop_token>
#include <string>
#include <thread>

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

// The value of environment variable `name`, or "" when it is not set.
std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// Answers one HTTP request on `socket`: GET /metrics gets the rendering, anything else an error.
void serve(tcp::socket socket, const avout::PrometheusMetrics& metrics) {
  boost::beast::flat_buffer buffer;
  http::request<http::string_body> request;
  boost::beast::error_code error;
  http::read(socket, buffer, request, error);
  if (error) return;  // the client went away: nothing to answer
  http::response<http::string_body> response;
  response.version(request.version());
  response.keep_alive(false);
  const bool is_metrics = request.target() == "/metrics";
  if (is_metrics && request.method() == http::verb::get) {
    response.result(http::status::ok);
    response.set(http::field::content_type, std::string(avout::PrometheusMetrics::content_type));
    response.body() = metrics.render();
  } else {
    response.result(is_metrics ? http::status::method_not_allowed : http::status::not_found);
    response.set(http::field::content_type, "text/plain");
    response.body() = is_metrics ? "only GET\n" : "try /metrics\n";
  }
  response.prepare_payload();
  http::write(socket, response, error);
  socket.shutdown(tcp::socket::shutdown_both, error);
}

// Accepts connections one after another until the io_context stops.
void accept_next(tcp::acceptor& acceptor, const avout::PrometheusMetrics& metrics) {
  acceptor.async_accept([&](boost::beast::error_code error, tcp::socket socket) {
    if (error) return;  // the acceptor closed
    serve(std::move(socket), metrics);
    accept_next(acceptor, metrics);
  });
}

// Something to measure: two threads' dosyncs on shared refs (they conflict now and then),
// lock acquisitions and agent sends, a round every 100 ms until `stop`.
void work(avout::Client& client, const std::string& names, std::stop_token stop) {
  auto checking = client.ref<long>(names + "/checking", 1000);
  auto savings = client.ref<long>(names + "/savings", 1000);
  auto lock = client.lock(names + "/lock");
  auto audit = client.agent<long>(names + "/audit", 0);
  while (!stop.stop_requested()) {
    client.dosync([&] {
      checking.alter([](long v) { return v - 1; });
      savings.alter([](long v) { return v + 1; });
    });
    {
      std::lock_guard hold(lock);
      audit.send([](long v) { return v + 1; });
    }
    std::this_thread::sleep_for(100ms);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string zookeeper = env("AVOUT_ZOOKEEPER");
  if (zookeeper.empty() || argc != 2) {
    std::cerr << "usage: AVOUT_ZOOKEEPER=host:port avout_example_metrics_server PORT\n"
                 "  AVOUT_ZOOKEEPER  ZooKeeper connect string\n"
                 "  PORT             where GET /metrics is served on 127.0.0.1 (0: any free)\n";
    return 2;
  }
  try {
    const auto port = static_cast<unsigned short>(std::stoul(argv[1]));
    // One sink for the whole process; several clients may share it.
    auto metrics = std::make_shared<avout::PrometheusMetrics>();
    avout::Client client(avout::ClientOptions{.hosts = zookeeper, .metrics = metrics});
    const std::string names = "/examples/metrics-" + std::to_string(std::random_device{}());

    asio::io_context io;
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), port));
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](boost::beast::error_code, int) { io.stop(); });
    accept_next(acceptor, *metrics);
    std::cout << "serving http://127.0.0.1:" << acceptor.local_endpoint().port() << "/metrics"
              << std::endl;

    std::jthread workers[] = {
        std::jthread([&](std::stop_token stop) { work(client, names, stop); }),
        std::jthread([&](std::stop_token stop) { work(client, names, stop); }),
    };
    io.run();
    for (auto& worker : workers) worker.request_stop();
    for (auto& worker : workers) worker.join();
    std::cout << "stopped\n";
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "metrics_server: " << error.what() << "\n";
    return 1;
  }
}
