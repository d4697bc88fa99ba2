"""Agent backends against a local HTTP server that speaks the Messages API (no network):
the real anthropic SDK is pointed at it with base_url; replies are scripted per test."""
import http.server
import json
import threading
import time

import pytest

from tileport.core import agents

KEY = "sk-ant-test-0123456789-SECRET"

GOOD = """Here is the port.

```rust
#[cutile::module]
pub mod port { /* ... */ }
```

```json
{"checks": ["loads use the same padding"], "unsupported": []}
```

VERDICT: PASS
"""


class FakeMessages(http.server.BaseHTTPRequestHandler):
    """POST /v1/messages: pops the next scripted step (status, body or callable, headers, delay)."""

    script: list = []
    seen: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).seen.append({"path": self.path, "body": body,
                                "key": self.headers.get("x-api-key")
                                or self.headers.get("authorization", "").removeprefix("Bearer ")})
        status, payload, headers, delay = type(self).script.pop(0)
        if delay:
            time.sleep(delay)
        if callable(payload):
            payload = payload(body)
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass                         # the client gave up (timeout test)

    def log_message(self, *a):
        pass


def ok(text, model="claude-test", tin=120, tout=45):
    return (200, lambda body: {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
                               "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                               "stop_sequence": None,
                               "usage": {"input_tokens": tin, "output_tokens": tout}}, None, 0)


def err(status, etype, msg, headers=None):
    return (status, {"type": "error", "error": {"type": etype, "message": msg}}, headers, 0)


@pytest.fixture
def server():
    FakeMessages.script, FakeMessages.seen = [], []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeMessages)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield srv, f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def settings(server, monkeypatch):
    monkeypatch.setenv("TILEPORT_TEST_KEY", KEY)
    return agents.LlmSettings(model="claude-test", max_tokens=512, temperature=0.0, timeout_s=2.0,
                         max_retries=2, base_url=server[1], api_key_env="TILEPORT_TEST_KEY",
                         prices={"claude-test": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}})


def fields(**kw):
    base = {"op": "relu", "kernel": "relu_kernel", "attempt": 1, "variant": "f16-TILE1024",
            "reference_source": "def relu_kernel(x, y, TILE): ...", "analysis": "{}",
            "reference_ir": "entry @relu_kernel ...", "previous": ""}
    return {**base, **kw}


def test_good_reply_is_transcribed_with_tokens_and_cost(server, settings, tmp_path):
    FakeMessages.script = [ok(GOOD)]
    req = agents.request_for("kernel_writer", fields(), settings)
    out = agents.transcript_path(tmp_path / "results", "relu", "write_kernel", 1)
    t = agents.exchange(req, agents.AnthropicBackend(settings), out, settings,
                        stage="write_kernel", op="relu", attempt=1)
    sent = FakeMessages.seen[0]
    assert sent["path"] == "/v1/messages" and sent["key"] == KEY
    assert sent["body"]["model"] == "claude-test" and sent["body"]["max_tokens"] == 512
    assert sent["body"]["temperature"] == 0.0 and "output_config" not in sent["body"]
    assert sent["body"]["system"].startswith("You are the kernel writer of tileport")
    assert "Operator `relu`, kernel `relu_kernel`, attempt 1." in sent["body"]["messages"][0]["content"]
    assert t["usage"] == {"input_tokens": 120, "output_tokens": 45}
    assert t["cost_usd"] == pytest.approx((120 * 3.0 + 45 * 15.0) / 1e6)
    assert t["request_hash"] == req.digest() and json.loads(out.read_text()) == t
    p = agents.parse_reply(t["reply"], "rust")
    assert p.output.startswith("#[cutile::module]") and p.verdict == "PASS"
    assert p.validation["checks"] == ["loads use the same padding"]


def test_reply_without_verdict_or_output_is_an_agent_output_failure():
    with pytest.raises(agents.AgentOutputError, match="VERDICT") as e:
        agents.parse_reply(GOOD.replace("VERDICT: PASS", "I think it is fine."), "rust")
    assert e.value.fail_class == "agent_output"
    with pytest.raises(agents.AgentOutputError, match="0 fenced ```rust blocks"):
        agents.parse_reply("no code here\nVERDICT: PASS", "rust")
    with pytest.raises(agents.AgentOutputError, match="2 fenced ```rust blocks"):
        agents.parse_reply(GOOD.replace("```json", "```rust\nfn x() {}\n```\n\n```json"), "rust")
    with pytest.raises(agents.AgentOutputError, match="not one of"):
        agents.parse_reply(GOOD.replace("VERDICT: PASS", "VERDICT: GREAT"), "rust")
    with pytest.raises(agents.AgentOutputError, match="validation block is not JSON"):
        agents.parse_reply(GOOD.replace('"unsupported": []}', '"unsupported": [}'), "rust")
    with pytest.raises(agents.AgentOutputError, match="json validation"):
        agents.parse_reply(GOOD.replace("```json", "```text"), "rust")
    # a garbage reply of any kind is an AgentOutputError, never another exception
    for junk in ("", "```", "VERDICT:", "```rust\n", "\x00\x01"):
        with pytest.raises(agents.AgentOutputError):
            agents.parse_reply(junk, "rust")


def test_rate_limit_then_success_is_retried(server, settings, tmp_path):
    FakeMessages.script = [err(429, "rate_limit_error", "slow down", {"retry-after-ms": "10"}),
                           err(529, "overloaded_error", "busy", {"retry-after-ms": "10"}), ok(GOOD)]
    req = agents.request_for("kernel_writer", fields(), settings)
    t = agents.exchange(req, agents.AnthropicBackend(settings), tmp_path / "t.json", settings,
                   stage="write_kernel", op="relu", attempt=1)
    assert len(FakeMessages.seen) == 3 and t["reply"] == GOOD


def test_errors_after_retries_are_clear(server, settings, tmp_path):
    req = agents.request_for("kernel_writer", fields(), settings)
    FakeMessages.script = [err(500, "api_error", "boom", {"retry-after-ms": "5"})] * 3
    with pytest.raises(agents.AgentError, match="HTTP 500 after 2 retries: boom"):
        agents.AnthropicBackend(settings).complete(req)
    FakeMessages.script = [err(401, "authentication_error", "invalid x-api-key")]
    with pytest.raises(agents.AgentError, match="rejected the key in TILEPORT_TEST_KEY .*invalid x-api-key"):
        agents.AnthropicBackend(settings).complete(req)
    FakeMessages.script = [err(404, "not_found_error", "model: claude-test")]
    with pytest.raises(agents.AgentError, match="model 'claude-test' not found"):
        agents.AnthropicBackend(settings).complete(req)
    assert not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("body", [{"foo": 1}, {"content": None, "model": "m", "usage": None},
                                  {"content": [{"type": "text", "text": "x"}], "model": "m"}])
def test_a_200_reply_that_is_not_a_message_is_a_clear_error(server, settings, tmp_path, body):
    FakeMessages.script = [(200, body, None, 0)]
    req = agents.request_for("kernel_writer", fields(), settings)
    with pytest.raises(agents.AgentError, match="HTTP 200 but the body is not a Messages API message"):
        agents.exchange(req, agents.AnthropicBackend(settings), tmp_path / "t.json", settings,
                   stage="write_kernel", op="relu", attempt=1)
    assert not (tmp_path / "t.json").exists()


def test_timeout(server, settings):
    s = agents.LlmSettings(**{**agents.settings_dict(settings), "timeout_s": 0.3, "max_retries": 0})
    FakeMessages.script = [(200, {}, None, 1.5)]
    with pytest.raises(agents.AgentError, match="no reply within 0.3 s"):
        agents.AnthropicBackend(s).complete(agents.request_for("kernel_writer", fields(), s))


def test_missing_key(monkeypatch):
    monkeypatch.delenv("TILEPORT_NO_SUCH_KEY", raising=False)
    with pytest.raises(agents.AgentError, match="TILEPORT_NO_SUCH_KEY is not set"):
        agents.AnthropicBackend(agents.LlmSettings(api_key_env="TILEPORT_NO_SUCH_KEY"))


def test_replay_answers_without_network_and_misses_clearly(server, settings, tmp_path):
    results = tmp_path / "results"
    FakeMessages.script = [ok(GOOD)]
    req = agents.request_for("kernel_writer", fields(), settings)
    live = agents.exchange(req, agents.AnthropicBackend(settings),
                           agents.transcript_path(results, "relu", "write_kernel", 1),
                           settings, stage="write_kernel", op="relu", attempt=1)
    server[0].shutdown()                                   # no server from here on
    replay = agents.ReplayBackend(results)
    again = agents.exchange(req, replay, tmp_path / "replayed" / "attempt-1.json", settings,
                       stage="write_kernel", op="relu", attempt=1)
    assert again["reply"] == live["reply"] and again["backend"] == "replay"
    assert again["request_hash"] == live["request_hash"]
    other = agents.request_for("kernel_writer", fields(attempt=2), settings)
    with pytest.raises(agents.AgentError, match=r"replay: no transcript of request [0-9a-f]{16}"):
        replay.complete(other)


def test_attempt_transcripts_are_never_overwritten(server, settings, tmp_path):
    FakeMessages.script = [ok(GOOD), ok(GOOD)]
    out = tmp_path / "attempt-1.json"
    req = agents.request_for("kernel_writer", fields(), settings)
    agents.exchange(req, agents.AnthropicBackend(settings), out, settings, stage="s", op="o", attempt=1)
    first = out.read_text()
    with pytest.raises(agents.AgentError, match="never overwritten"):
        agents.exchange(req, agents.AnthropicBackend(settings), out, settings, stage="s", op="o", attempt=1)
    assert out.read_text() == first


def test_key_never_reaches_a_file(server, settings, tmp_path):
    FakeMessages.script = [ok(GOOD), err(401, "authentication_error", "bad key")]
    results = tmp_path / "results"
    req = agents.request_for("kernel_writer", fields(), settings)
    agents.exchange(req, agents.AnthropicBackend(settings), agents.transcript_path(results, "relu", "write_kernel", 1),
               settings, stage="write_kernel", op="relu", attempt=1)
    with pytest.raises(agents.AgentError) as e:
        agents.exchange(req, agents.AnthropicBackend(settings),
                        agents.transcript_path(results, "relu", "write_kernel", 2),
                        settings, stage="write_kernel", op="relu", attempt=2)
    assert KEY not in str(e.value)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and not any(KEY.encode() in p.read_bytes() for p in files)


def test_request_digest_is_stable_and_sensitive():
    s = agents.LlmSettings()
    r1 = agents.request_for("kernel_writer", fields(), s)
    assert r1.digest() == agents.request_for("kernel_writer", fields(), s).digest()
    assert r1.digest() != agents.request_for("kernel_writer", fields(previous="IR FAIL"), s).digest()
    assert r1.digest() != agents.request_for("kernel_writer", fields(),
                                        agents.LlmSettings(temperature=0.5)).digest()


def test_template_errors_name_file_and_placeholder(tmp_path):
    (tmp_path / "kernel_writer.md").write_text("sys\n---\nuser ${op}\nmore ${nope}\n")
    with pytest.raises(agents.AgentError, match=r"kernel_writer.md:4: placeholder \$\{nope\} has no value"):
        agents.render("kernel_writer", {"op": "x"}, tmp_path)
    with pytest.raises(agents.AgentError, match="unknown agent role"):
        agents.render("poet", {}, tmp_path)
    (tmp_path / "ir_diagnoser.md").write_text("no separator ${op}")
    with pytest.raises(agents.AgentError, match="no '---' line"):
        agents.render("ir_diagnoser", {"op": "x"}, tmp_path)


def test_lone_surrogate_in_output_is_agent_output():
    with pytest.raises(agents.AgentOutputError, match="not valid UTF-8"):
        agents.parse_reply(GOOD.replace("pub mod port", "pub mod port \ud800"), "rust")


def test_replay_names_unreadable_transcripts(settings, tmp_path):
    t = tmp_path / "op" / "transcripts" / "write_kernel" / "k"
    t.mkdir(parents=True)
    (t / "attempt-1.json").write_text("{not json")
    (t / "attempt-2.json").write_text(json.dumps({"request_hash": "x", "usage": "lots", "reply": "r"}))
    rb = agents.ReplayBackend(tmp_path)
    with pytest.raises(agents.AgentError, match=r"unreadable transcripts there: .*attempt-1.json"):
        rb.complete(agents.request_for("kernel_writer", fields(), settings))
    assert len(rb.unreadable) == 2


def test_key_echoed_by_the_endpoint_is_redacted(server, settings, tmp_path):
    FakeMessages.script = [err(401, "authentication_error", f"invalid key {KEY}"),
                           ok(GOOD.replace("/* ... */", f"/* {KEY} */"))]
    req = agents.request_for("kernel_writer", fields(), settings)
    with pytest.raises(agents.AgentError) as e:
        agents.AnthropicBackend(settings).complete(req)
    assert KEY not in str(e.value) and "<redacted>" in str(e.value)
    t = agents.exchange(req, agents.AnthropicBackend(settings), tmp_path / "t.json", settings, stage="s",
                   op="o", attempt=1)
    assert KEY not in t["reply"] and KEY.encode() not in (tmp_path / "t.json").read_bytes()
