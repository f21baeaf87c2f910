#!/usr/bin/python3
# Copyright 2026 The kbisect Authors.
"""gRPC health checking and server reflection of kbisect-coordinator, seen by another client.

The client is Python's grpcio (Debian's python3-grpcio), not kbisect's C++ stack, and it has no
generated code: the health and reflection messages are encoded by hand below, so the test checks
the wire contract that kubelet's gRPC probes and grpcurl rely on.

    health_reflection_test.py BIN_DIR

Asserts:
  * grpc.health.v1.Health/Check answers SERVING for "", kbisect.v1.CoordinatorService and
    kbisect.v1.WorkerService on the main port and on the --health-listen port, and NOT_FOUND for
    a name the coordinator does not serve;
  * the --health-listen port serves nothing else (reflection is UNIMPLEMENTED there);
  * server reflection (v1alpha) on the main port lists both kbisect services, the health service
    and itself, and returns a file descriptor that defines grpc.health.v1.Health (Check, Watch)
    and its messages, as grpcurl needs to call it;
  * after SIGTERM, while a call is still in flight (a SubmitJob whose repository fetch hangs on a
    loopback HTTP server this test runs), a Watch on the main port sees NOT_SERVING and then
    ends (UNAVAILABLE) instead of holding the drain, and the health port answers NOT_SERVING for
    "" and each service (the unknown name stays NOT_FOUND); once the call ends the coordinator
    exits 0.

Exit 77 (ctest: skipped) when grpcio or protobuf for Python is not installed.
"""

import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

try:
    import grpc
    from google.protobuf import descriptor_pb2
except ImportError as error:  # pragma: no cover - depends on the machine
    print(f"SKIP: {error} (apt-get install python3-grpcio python3-protobuf)")
    sys.exit(77)

BIN_DIR = ""
SERVICES = ("kbisect.v1.CoordinatorService", "kbisect.v1.WorkerService")
SERVING, NOT_SERVING = 1, 2
REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"


# --- protobuf wire format, just what these two services need --------------------------------

def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _string_field(number, text):
    data = text.encode() if isinstance(text, str) else text
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _decode(data):
    """{field number: [value, ...]}: ints for varints, bytes for length-delimited fields."""
    fields, i = {}, 0
    while i < len(data):
        key, i = _read_varint(data, i)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, i = _read_varint(data, i)
        elif wire_type == 2:
            length, i = _read_varint(data, i)
            value, i = data[i:i + length], i + length
        else:
            raise ValueError(f"unexpected wire type {wire_type} in field {number}")
        fields.setdefault(number, []).append(value)
    return fields


def _read_varint(data, i):
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def _health_request(service):
    # HealthCheckRequest { string service = 1; }
    return _string_field(1, service) if service else b""


def _health_status(response):
    # HealthCheckResponse { ServingStatus status = 1; } (UNKNOWN = 0 is the empty message)
    return _decode(response).get(1, [0])[0]


# --- the daemon ------------------------------------------------------------------------------

class Coordinator:
    """kbisect-coordinator on free loopback ports, its log in the temp dir."""

    def __init__(self, tmp):
        self.log_path = os.path.join(tmp, "coordinator.log")
        port_file = os.path.join(tmp, "port")
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [os.path.join(BIN_DIR, "kbisect-coordinator"), "--listen", "127.0.0.1:0",
             "--health-listen", "127.0.0.1:0", "--state-dir", os.path.join(tmp, "state"),
             "--port-file", port_file, "--log-format", "json", "--drain-timeout", "120"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"coordinator did not start:\n{self.read_log()}")
            time.sleep(0.05)
        with open(port_file) as f:
            self.address = f"127.0.0.1:{f.read().strip()}"
        self.health_address = f"127.0.0.1:{self._logged_port('health checks on')}"

    def _logged_port(self, prefix):
        for line in self.read_log().splitlines():
            event = json.loads(line)
            if event["msg"].startswith(prefix):
                return event["port"]
        raise AssertionError(f"no '{prefix}' line in the log:\n{self.read_log()}")

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.log.close()


class HangingGitServer:
    """A loopback HTTP server whose every request blocks until release(): a stuck git fetch."""

    def __init__(self):
        self.requested = threading.Event()
        self.released = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the http.server API)
                outer.requested.set()
                outer.released.wait(300)
                self.send_error(404)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/kernels.git"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def release(self):
        self.released.set()

    def close(self):
        self.release()
        self.server.shutdown()
        self.server.server_close()


class HealthAndReflectionTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kbisect-health-test-")
        self.coordinator = Coordinator(self.tmp)
        self.channels = []

    def tearDown(self):
        for channel in self.channels:
            channel.close()
        self.coordinator.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def channel(self, address):
        channel = grpc.insecure_channel(address)
        self.channels.append(channel)
        return channel

    def check(self, channel, service):
        """The status Check answers for `service`, or the grpc.StatusCode it fails with."""
        call = channel.unary_unary("/grpc.health.v1.Health/Check")
        try:
            return _health_status(call(_health_request(service), timeout=10))
        except grpc.RpcError as error:
            return error.code()

    def reflect(self, channel, *requests):
        """ServerReflectionInfo: one response (its fields decoded) per request."""
        call = channel.stream_stream(REFLECTION)
        return [_decode(r) for r in call(iter(requests), timeout=10)]

    def test_health_per_service_on_both_ports(self):
        for address in (self.coordinator.address, self.coordinator.health_address):
            channel = self.channel(address)
            for service in ("",) + SERVICES:
                self.assertEqual(self.check(channel, service), SERVING, f"{address} {service!r}")
            self.assertEqual(self.check(channel, "kbisect.v1.NoSuchService"),
                             grpc.StatusCode.NOT_FOUND, address)

    def test_health_port_serves_only_health(self):
        channel = self.channel(self.coordinator.health_address)
        with self.assertRaises(grpc.RpcError) as raised:
            self.reflect(channel, _string_field(7, "*"))
        self.assertEqual(raised.exception.code(), grpc.StatusCode.UNIMPLEMENTED)

    def test_reflection_lists_the_services_and_describes_health(self):
        channel = self.channel(self.coordinator.address)
        # ServerReflectionRequest: list_services = 7, file_containing_symbol = 4.
        listed, health, coordinator = self.reflect(
            channel, _string_field(7, "*"), _string_field(4, "grpc.health.v1.Health"),
            _string_field(4, "kbisect.v1.CoordinatorService"))

        # ServerReflectionResponse.list_services_response = 6 { repeated ServiceResponse service
        # = 1 { string name = 1 } }.
        self.assertIn(6, listed, listed)
        names = {_decode(s)[1][0].decode() for s in _decode(listed[6][0]).get(1, [])}
        self.assertLessEqual(set(SERVICES) | {"grpc.health.v1.Health",
                                              "grpc.reflection.v1alpha.ServerReflection"}, names)

        for response, symbol in ((health, "grpc.health.v1.Health"),
                                 (coordinator, "kbisect.v1.CoordinatorService")):
            # error_response = 7 is what the gap looked like ("Symbol not found").
            self.assertNotIn(7, response, f"{symbol}: {response.get(7)}")
            self.assertIn(4, response, symbol)  # file_descriptor_response = 4
            files = [descriptor_pb2.FileDescriptorProto.FromString(b)
                     for b in _decode(response[4][0]).get(1, [])]
            package, service = symbol.rsplit(".", 1)
            defining = [f for f in files if f.package == package and
                        service in [s.name for s in f.service]]
            self.assertEqual(len(defining), 1, [f.name for f in files])
            if service == "Health":
                methods = {m.name: (m.input_type, m.output_type, m.server_streaming)
                           for m in defining[0].service[0].method}
                self.assertEqual(methods, {
                    "Check": (".grpc.health.v1.HealthCheckRequest",
                              ".grpc.health.v1.HealthCheckResponse", False),
                    "Watch": (".grpc.health.v1.HealthCheckRequest",
                              ".grpc.health.v1.HealthCheckResponse", True)})
                self.assertEqual({m.name for m in defining[0].message_type},
                                 {"HealthCheckRequest", "HealthCheckResponse"})

    def test_sigterm_turns_every_status_not_serving_during_the_drain(self):
        git = HangingGitServer()
        self.addCleanup(git.close)
        main = self.channel(self.coordinator.address)
        health = self.channel(self.coordinator.health_address)
        watch = main.unary_stream("/grpc.health.v1.Health/Watch")(
            _health_request(SERVICES[0]), timeout=60)  # Under --drain-timeout.
        self.assertEqual(_health_status(next(watch)), SERVING)

        # A call in flight: SubmitJob blocks fetching the repository from the hanging server.
        submit_log = open(os.path.join(self.tmp, "submit.log"), "w")
        self.addCleanup(submit_log.close)
        submit = subprocess.Popen(
            [os.path.join(BIN_DIR, "kbisect"), "submit", "v1.0", "HEAD", "--repo", git.url,
             "--coordinator", self.coordinator.address, "--", "./bench.sh"],
            stdout=submit_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.addCleanup(lambda: submit.poll() is None and submit.kill())
        self.assertTrue(git.requested.wait(60), "the coordinator never fetched the repository")

        self.coordinator.process.send_signal(signal.SIGTERM)
        self.assertEqual(_health_status(next(watch)), NOT_SERVING)
        # Then the watch ends, released like the coordinator's other blocked calls, instead of
        # holding the drain until --drain-timeout (gRPC's default health service did).
        with self.assertRaises(grpc.RpcError) as ended:
            next(watch)
        self.assertEqual(ended.exception.code(), grpc.StatusCode.UNAVAILABLE)
        # The health port went NOT_SERVING first (kubelet's probes fail from the start of the
        # drain), and stays up while the drain lasts.
        for service in ("",) + SERVICES:
            self.assertEqual(self.check(health, service), NOT_SERVING, repr(service))
        self.assertEqual(self.check(health, "kbisect.v1.NoSuchService"),
                         grpc.StatusCode.NOT_FOUND)
        # Still draining: the submission has not been answered.
        self.assertIsNone(self.coordinator.process.poll(), self.coordinator.read_log())
        self.assertIsNone(submit.poll())

        git.release()
        self.assertNotEqual(submit.wait(60), 0)
        # Idle connections hold a server's shutdown until the client reads its GOAWAY.
        for channel in self.channels:
            channel.close()
        self.assertEqual(self.coordinator.process.wait(60), 0, self.coordinator.read_log())
        self.assertIn("not serving", self.coordinator.read_log())


if __name__ == "__main__":
    BIN_DIR = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("KBISECT_BIN_DIR", "")
    if not BIN_DIR:
        sys.exit("usage: health_reflection_test.py BIN_DIR")
    unittest.main(verbosity=2)
