"""LLM agent backends for tileport's roles: prompts, the Anthropic Messages API, transcripts, replay.

The LLM only writes text. :func:`parse_reply` extracts the one fenced output a role must return
and its closing ``VERDICT:`` line; anything else is an :class:`AgentOutputError`
(``fail_class: agent_output``) -- a failed attempt, never a crash, never accepted silently.
tileport's own stages then compile, dump, diff, test and benchmark that output; the agent's
verdict is recorded as a claim and never taken as success.

Backends:

* :class:`AnthropicBackend` -- the official ``anthropic`` SDK. Model, max_tokens, temperature
  (an extra body field: SDK 2.14 has no such argument), effort, timeout and retry count come
  from :class:`LlmSettings`; the SDK retries rate limits (429),
  overload (529) and 5xx with exponential backoff honouring ``retry-after`` (its documented
  behaviour). The API key is read from the environment variable ``api_key_env`` only, and is
  never written anywhere: transcripts hold the request body and the reply, not headers.
* :class:`ReplayBackend` -- answers from stored transcripts by request hash (no network); a
  request it has no transcript for is an :class:`AgentError` naming the hash and the folder.

Every exchange is written by :func:`exchange` to ``results/<op>/transcripts/<stage>/attempt-<n>.json``
(prompt, reply, model, parameters, token counts, cost, seconds, request hash); an attempt's
transcript is never overwritten.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import string
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tileport.core.verdict import VERDICTS, atomic_write_text

ROLES = ("analyser", "kernel_writer", "ir_diagnoser", "host_builder", "perf_diagnoser")
PROMPTS = Path(__file__).resolve().parents[2] / "prompts"


class AgentError(RuntimeError):
    """An exchange could not happen (no key, bad key, unknown model, network, timeout, replay
    miss). ``fail_class`` is ``env`` unless stated otherwise."""

    def __init__(self, message: str, fail_class: str = "env"):
        super().__init__(message)
        self.fail_class = fail_class


class AgentOutputError(AgentError):
    """The reply lacks the fenced output or a parsable ``VERDICT:`` line (``agent_output``)."""

    def __init__(self, message: str):
        super().__init__(message, "agent_output")


@dataclass(frozen=True)
class LlmSettings:
    """What config.yaml says about the LLM. Prices are USD per million tokens, by model."""

    model: str = "claude-sonnet-4-5"
    max_tokens: int = 8192
    # anthropic 2.14's messages.create has no temperature argument (sampling is the model's);
    # a temperature set here is sent as an extra body field for endpoints that still take it
    temperature: float | None = None
    effort: str | None = None            # output_config.effort: low / medium / high / xhigh / max
    timeout_s: float = 120.0
    max_retries: int = 4
    base_url: str | None = None
    api_key_env: str = "ANTHROPIC_API_KEY"
    prices: dict = field(default_factory=dict)


@dataclass
class Request:
    """One prompt to one role. :meth:`digest` identifies it for replay."""

    role: str
    system: str
    prompt: str
    model: str
    max_tokens: int
    temperature: float | None = None
    effort: str | None = None

    def body(self) -> dict:
        """The Messages API request body (what is sent, minus transport headers)."""
        b = {"model": self.model, "max_tokens": self.max_tokens, "system": self.system,
             "messages": [{"role": "user", "content": self.prompt}]}
        if self.temperature is not None:
            b["temperature"] = self.temperature
        if self.effort is not None:
            b["output_config"] = {"effort": self.effort}
        return b

    def digest(self) -> str:
        """sha256 of the role and the canonical JSON body: equal requests, equal digests."""
        canon = json.dumps({"role": self.role, **self.body()}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()


@dataclass
class Reply:
    text: str
    model: str
    input_tokens: int
    output_tokens: int
    seconds: float
    backend: str


def render(role: str, fields: dict, prompts_dir: Path = PROMPTS) -> tuple[str, str]:
    """Fill ``prompts/<role>.md`` with ``fields`` (``${name}`` placeholders, :class:`string.Template`).
    The text before a line ``---`` is the system prompt, the rest the user prompt.

    Raises:
        AgentError: unknown role, missing template, or a placeholder without a value (named).
    """
    if role not in ROLES:
        raise AgentError(f"unknown agent role '{role}' (roles: {', '.join(ROLES)})", "env")
    path = Path(prompts_dir) / f"{role}.md"
    try:
        text = path.read_text()
    except OSError as exc:
        raise AgentError(f"{path}: cannot read prompt template: {exc.strerror}") from None
    try:
        filled = string.Template(text).substitute(fields)
    except KeyError as exc:
        line = next((i + 1 for i, ln in enumerate(text.splitlines()) if f"${{{exc.args[0]}}}" in ln), 1)
        raise AgentError(f"{path}:{line}: placeholder ${{{exc.args[0]}}} has no value") from None
    except ValueError as exc:
        raise AgentError(f"{path}: malformed placeholder: {exc}") from None
    system, sep, user = filled.partition("\n---\n")
    if not sep:
        raise AgentError(f"{path}: no '---' line separating the system prompt from the user prompt")
    return system.strip(), user.strip()


_FENCE = re.compile(r"^```([\w+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


@dataclass
class Parsed:
    output: str          # the fenced block's content (the file to write)
    verdict: str         # the agent's own claim, recorded only
    validation: dict     # the agent's validation block, recorded only


def parse_reply(text: str, lang: str) -> Parsed:
    """Extract the single fenced ``lang`` block, the ``json`` validation block and the final
    ``VERDICT: <word>`` line of a reply.

    Raises:
        AgentOutputError: no or several ``lang`` blocks, no JSON-object validation block, or the
            last non-empty line is not ``VERDICT:`` with a word of the verdict schema.
    """
    blocks = [(m[1].lower(), m[2]) for m in _FENCE.finditer(text or "")]
    outs = [b for tag, b in blocks if tag == lang.lower()]
    if len(outs) != 1:
        raise AgentOutputError(f"reply has {len(outs)} fenced ```{lang} blocks, expected exactly one "
                               f"(blocks seen: {[t or 'untagged' for t, _ in blocks] or 'none'})")
    vals = [b for tag, b in blocks if tag == "json"]
    if len(vals) != 1:
        raise AgentOutputError(f"reply has {len(vals)} fenced ```json validation blocks, expected one")
    try:
        validation = json.loads(vals[0])
    except json.JSONDecodeError as exc:
        raise AgentOutputError(f"validation block is not JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(validation, dict):
        raise AgentOutputError("validation block is not a JSON object")
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    m = re.fullmatch(r"VERDICT:\s*([A-Z_]+)", last)
    if not m:
        raise AgentOutputError(f"reply does not end with a 'VERDICT: <word>' line (last line: {last[:120]!r})")
    if m[1] not in VERDICTS:
        raise AgentOutputError(f"VERDICT word {m[1]!r} is not one of {', '.join(VERDICTS)}")
    try:
        outs[0].encode("utf-8")
    except UnicodeEncodeError as exc:
        raise AgentOutputError(f"the ```{lang} block is not valid UTF-8 text: {exc.reason} at "
                               f"character {exc.start}") from None
    return Parsed(output=outs[0], verdict=m[1], validation=validation)


class AnthropicBackend:
    """Messages API through the official SDK (see module doc).

    Raises (constructor):
        AgentError: the ``anthropic`` package is missing or the key variable is unset/empty.
    """

    name = "anthropic"

    def __init__(self, settings: LlmSettings):
        try:
            import anthropic
        except ImportError:
            raise AgentError("the anthropic package is not installed (requirements.lock)") from None
        key = os.environ.get(settings.api_key_env, "")
        if not key:
            raise AgentError(f"environment variable {settings.api_key_env} is not set: the anthropic "
                             f"backend needs an API key (or use backend replay)")
        self._sdk = anthropic
        self.settings = settings
        self.secret = key
        self._client = anthropic.Anthropic(api_key=key, base_url=settings.base_url,
                                           timeout=settings.timeout_s,
                                           max_retries=settings.max_retries)

    def complete(self, req: Request) -> Reply:
        """Send ``req``; returns the reply text and usage.

        Raises:
            AgentError: bad key (401/403), unknown model (404), bad request (400), timeout or
                connection failure, or rate limit / overload / 5xx still failing after the SDK's
                retries -- each with the HTTP status and the API's message.
        """
        try:
            return self._complete(req)
        except AgentError as exc:   # an endpoint that echoes the key must not put it in a file
            raise AgentError(redact(str(exc), self.secret), exc.fail_class) from None

    def _complete(self, req: Request) -> Reply:
        a = self._sdk
        t0 = time.monotonic()
        body = req.body()
        extra = {"temperature": body.pop("temperature")} if "temperature" in body else None
        try:
            r = self._client.messages.create(**body, extra_body=extra)
        except a.AuthenticationError as exc:
            raise AgentError(f"Anthropic API rejected the key in {self.settings.api_key_env} "
                             f"(HTTP {exc.status_code}): {_api_message(exc)}") from None
        except a.PermissionDeniedError as exc:
            raise AgentError(f"Anthropic API: permission denied (HTTP 403): {_api_message(exc)}") from None
        except a.NotFoundError as exc:
            raise AgentError(f"Anthropic API: model '{req.model}' not found (HTTP 404): "
                             f"{_api_message(exc)}") from None
        except a.APITimeoutError:
            raise AgentError(f"Anthropic API: no reply within {self.settings.timeout_s} s "
                             f"(after {self.settings.max_retries} retries)") from None
        except a.APIConnectionError as exc:
            raise AgentError(f"Anthropic API: cannot connect to {self._client.base_url}: {exc}") from None
        except a.APIStatusError as exc:
            raise AgentError(f"Anthropic API: HTTP {exc.status_code} after {self.settings.max_retries} "
                             f"retries: {_api_message(exc)}") from None
        try:   # an endpoint may answer 200 with something that is not a Messages API message
            text = "".join(getattr(b, "text", "") for b in r.content if getattr(b, "type", "") == "text")
            reply = Reply(text=text, model=str(r.model), input_tokens=int(r.usage.input_tokens),
                          output_tokens=int(r.usage.output_tokens),
                          seconds=round(time.monotonic() - t0, 3), backend=self.name)
        except (AttributeError, TypeError, ValueError) as exc:
            raise AgentError(f"{self._client.base_url}: HTTP 200 but the body is not a Messages API "
                             f"message (content / model / usage missing or malformed: "
                             f"{type(exc).__name__}: {exc})") from None
        return reply


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` (the API key) replaced by ``<redacted>``."""
    return text.replace(secret, "<redacted>") if secret and len(secret) >= 8 else text


def _api_message(exc) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(exc, "message", exc))


class ReplayBackend:
    """Answers from the transcripts under ``folder`` (searched recursively), by request digest."""

    name = "replay"

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.index: dict[str, dict] = {}
        self.unreadable: list[str] = []
        for p in sorted(self.folder.rglob("attempt-*.json")) if self.folder.exists() else []:
            if "transcripts" not in p.parts:
                continue
            try:
                t = json.loads(p.read_text())
                if not isinstance(t.get("reply"), str) or not isinstance(t.get("usage", {}), dict):
                    raise ValueError("no 'reply' text or a malformed 'usage'")
                self.index.setdefault(t["request_hash"], {**t, "_file": str(p)})
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                self.unreadable.append(f"{p}: {exc}")

    def complete(self, req: Request) -> Reply:
        """The stored reply of an identical request.

        Raises:
            AgentError: no transcript for this request's digest.
        """
        t = self.index.get(req.digest())
        if t is None:
            bad = (f"; unreadable transcripts there: {'; '.join(self.unreadable[:3])}"
                   if self.unreadable else "")
            raise AgentError(f"replay: no transcript of request {req.digest()[:16]} (role {req.role}, "
                             f"model {req.model}) under {self.folder}; record one with the "
                             f"anthropic backend first{bad}")
        u = t.get("usage", {})
        return Reply(text=t["reply"], model=t["model"], input_tokens=u.get("input_tokens", 0),
                     output_tokens=u.get("output_tokens", 0), seconds=0.0, backend=self.name)


def cost_usd(settings: LlmSettings, model: str, input_tokens: int, output_tokens: int) -> float | None:
    """Cost of one call from the price table (USD per million tokens); None when the model has
    no price there."""
    p = settings.prices.get(model)
    if not p:
        return None
    return (input_tokens * p["input_per_mtok"] + output_tokens * p["output_per_mtok"]) / 1e6


def transcript_path(results: str | Path, op: str, stage: str, attempt: int) -> Path:
    """``results/<op>/transcripts/<stage>/attempt-<n>.json``."""
    return Path(results) / op / "transcripts" / stage / f"attempt-{attempt}.json"


def exchange(req: Request, backend, out: str | Path, settings: LlmSettings, *, stage: str, op: str,
             attempt: int, record: bool = True) -> dict:
    """Run one request through ``backend`` and return its transcript (written to ``out`` when
    ``record``). A failed exchange raises :class:`AgentError` and writes nothing.

    Raises:
        AgentError: from the backend, or ``out`` exists already (an attempt is never overwritten).
    """
    out = Path(out)
    if record and out.exists():
        raise AgentError(f"{out}: transcript of this attempt exists; attempts are never overwritten")
    reply = backend.complete(req)
    secret = getattr(backend, "secret", None)
    if secret:
        reply.text = redact(reply.text, secret)
    t = {"schema": "tileport.transcript/1", "role": req.role, "stage": stage, "op": op,
         "attempt": attempt, "backend": reply.backend, "model": reply.model,
         "parameters": {"max_tokens": req.max_tokens, "temperature": req.temperature,
                        "effort": req.effort},
         "request_hash": req.digest(), "system": req.system, "prompt": req.prompt,
         "reply": reply.text,
         "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
         "cost_usd": cost_usd(settings, reply.model, reply.input_tokens, reply.output_tokens),
         "seconds": reply.seconds}
    if record:
        atomic_write_text(out, json.dumps(t, indent=1) + "\n")
    return t


def request_for(role: str, fields: dict, settings: LlmSettings, prompts_dir: Path = PROMPTS) -> Request:
    """A :class:`Request` for ``role`` from its filled template and the settings."""
    system, user = render(role, fields, prompts_dir)
    return Request(role=role, system=system, prompt=user, model=settings.model,
                   max_tokens=settings.max_tokens, temperature=settings.temperature,
                   effort=settings.effort)


def without_repo(fields: dict, repo_root: str | Path) -> dict:
    """``fields`` with the checkout's absolute path replaced by ``<repo>`` in every string:
    prompts name no path of one clone, so a transcript replays in any other."""
    root = str(Path(repo_root).resolve())
    return {k: v.replace(root, "<repo>") if isinstance(v, str) else v for k, v in fields.items()}


def role_config(backend: str, llm: dict, results: str | Path, **extra) -> dict:
    """What :func:`consult` needs for a diagnoser role: ``backend``, ``results``, config.yaml's
    ``llm.replay_dir`` and, for any backend but ``deterministic``, the :class:`LlmSettings`."""
    cfg = {"backend": backend, "results": Path(results), "replay_dir": llm.get("replay_dir"), **extra}
    if backend != "deterministic":
        cfg["settings"] = settings_from_config(llm)
    return cfg


def settings_from_config(llm: dict) -> LlmSettings:
    """:class:`LlmSettings` from config.yaml's ``llm`` section (``replay_dir`` is not a setting;
    an empty ``base_url`` means the SDK's default endpoint)."""
    s = LlmSettings(**{k: v for k, v in llm.items() if k != "replay_dir"})
    if not s.base_url:
        s = LlmSettings(**{**settings_dict(s), "base_url": None})
    return s


def settings_dict(s: LlmSettings) -> dict:
    """The settings as recorded in verdicts (no key: only the name of its variable)."""
    return asdict(s)


def retire_transcript(t: Path) -> bool:
    """Move one transcript to ``<its folder>/previous/<UTC time>/`` (kept, never overwritten,
    no longer counted in summary.csv). Returns whether there was one."""
    import time as _time

    t = Path(t)
    if not t.exists():
        return False
    stamp = _time.strftime("%Y%m%dT%H%M%SZ", _time.gmtime())
    d, i = t.parent / "previous" / stamp, 1
    while (d / t.name).exists():
        d, i = t.parent / "previous" / f"{stamp}.{i}", i + 1
    d.mkdir(parents=True, exist_ok=True)
    t.replace(d / t.name)
    return True


def consult(role: str, fields: dict, cfg: dict, *, op: str, stage: str, attempt: int, lang: str,
            repo_root: str | Path | None = None) -> dict:
    """One advisory exchange of a diagnoser role (IR diagnoser, perf diagnoser): fill
    ``prompts/<role>.md`` with ``fields`` (``repo_root`` replaced by ``<repo>`` so replay works in
    any clone), ask ``cfg["backend"]`` (``anthropic`` / ``auto`` -> the API, ``replay`` -> the
    transcripts under ``cfg["replay_dir"]``), store the transcript as
    ``<cfg["results"]>/<op>/transcripts/<stage>/attempt-<n>.json`` (``stage`` may hold a kernel:
    ``ir_diagnose/<kernel>``; an earlier one of the same attempt moves to ``previous/``: the stage
    asking again is a rerun) and parse the reply (one fenced ``lang`` block, a json block, a
    ``VERDICT:`` line).

    Returns ``{"backend", "output", "agent_claim", "transcript"}``, or ``{"backend", "error",
    "fail_class"}`` (``env`` for key / network / replay miss, ``agent_output`` for an unusable
    reply). Never raises: a diagnoser's failure must not stop the stage that asked.
    """
    llm = "replay" if cfg["backend"] == "replay" else "anthropic"
    results = Path(cfg["results"])
    tpath = transcript_path(results, op, stage, attempt)
    if llm != "replay":
        # the stage that asks is being rerun: its earlier exchange is kept under previous/
        retire_transcript(tpath)
    try:
        if repo_root:
            fields = without_repo(fields, repo_root)
        req = request_for(role, fields, cfg["settings"])
        be = ReplayBackend(cfg.get("replay_dir") or results) if llm == "replay" else AnthropicBackend(cfg["settings"])
        t = exchange(req, be, tpath, cfg["settings"], stage=stage.split("/")[0], op=op, attempt=attempt,
                     record=llm != "replay")
    except (AgentError, OSError, ValueError, KeyError) as exc:
        return {"backend": llm, "error": str(exc)[:800], "fail_class": getattr(exc, "fail_class", "env")}
    try:
        parsed = parse_reply(t["reply"], lang)
    except AgentOutputError as exc:
        return {"backend": llm, "error": f"unusable reply: {exc}"[:800], "fail_class": "agent_output",
                "transcript": str(tpath)}
    return {"backend": llm, "output": parsed.output, "transcript": str(tpath),
            "agent_claim": {"verdict": parsed.verdict, "validation": parsed.validation}}
