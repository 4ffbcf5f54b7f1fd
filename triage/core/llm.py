"""Chat models for the worker (LLM planner) and the judge: building one, and calling it safely.

Two decisions live here, shared by every role that talks to a model:

- **Any LangChain chat model, configured the same way.** `chat_model()` turns a
  `ModelSettings` ("provider:model", base URL for OpenAI-compatible servers, API key from the
  settings, a mounted file or the provider's usual variable, timeout) into a `BaseChatModel`
  through LangChain's `init_chat_model`. The client's own retries are switched off: the one
  retry bound is ours.
- **One door to the model.** `ModelClient.invoke()` is the only way a role sends messages:
  every message is redacted right there (whatever the caller built), each request has the
  client's timeout, failures and unusable replies are retried a bounded number of times with
  capped backoff, tokens and outcomes are counted per role (`triage.metrics`), and when the
  attempts are spent it raises `ModelError` so the caller takes its deterministic path.

Errors are the ModelError branch of triage/core/errors.py.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from tools.errors import truncate
from tools.redact import Redactor
from triage.core import metrics
from triage.core.errors import (
    ModelError,
    ModelNotConfigured,
    ModelOutputInvalid,
    ModelUnavailable,
)
from triage.core.metrics import Role
from triage.core.settings import ModelSettings

T = TypeVar("T")

LLM_EXTRA = "pip install 'triage[llm]'"  # what installs the model libraries (pyproject.toml)
MAX_BACKOFF_S = 10.0
# HTTP statuses a retry cannot fix (bad request, bad key, no such model): fail fast.
_FINAL_STATUSES = frozenset({400, 401, 403, 404, 422})


def api_key(settings: ModelSettings) -> str | None:
    """The key from the settings, else from the mounted file, else None (provider default)."""
    if settings.api_key is not None:
        return settings.api_key.get_secret_value()
    if settings.api_key_file is not None:
        try:
            return settings.api_key_file.read_text().strip() or None
        except OSError as e:
            msg = f"cannot read the model API key file {settings.api_key_file}: {e.strerror}"
            raise ModelNotConfigured(msg) from e
    return None


def _libraries(settings: ModelSettings) -> list[str]:
    """The modules a configured model needs: LangChain's chat models and, for OpenAI and
    OpenAI-compatible servers (a name without a provider is OpenAI's), its integration; both
    come with the `llm` extra. Another provider's integration is named by LangChain itself."""
    name = settings.name or ""
    provider = name.partition(":")[0] if ":" in name else ""
    return ["langchain", *(["langchain_openai"] if provider in ("", "openai") else [])]


def _not_installed(settings: ModelSettings, missing: str) -> ModelNotConfigured:
    return ModelNotConfigured(
        f"model {settings.name!r} is configured but the model libraries are not installed "
        f"(no module {missing!r}): {LLM_EXTRA}"
    )


def require_libraries(settings: ModelSettings) -> None:
    """ModelNotConfigured, in one line naming the extra, when a model is configured but its
    libraries are not installed. Cheap (nothing is imported): a surface calls it before any
    work."""
    if not settings.name:
        return
    for module in _libraries(settings):
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:  # a finder that refuses it, or a broken install
            found = False
        if not found:
            raise _not_installed(settings, module)


def chat_model(settings: ModelSettings) -> BaseChatModel:
    """A LangChain chat model from the settings; raises ModelNotConfigured with a plain reason."""
    if not settings.name:
        msg = "no model configured (set TRIAGE_WORKER_MODEL__NAME, e.g. 'openai:gpt-4.1-mini')"
        raise ModelNotConfigured(msg)
    require_libraries(settings)
    from langchain.chat_models import init_chat_model  # noqa: PLC0415 - heavy, only when used

    kwargs: dict[str, Any] = {
        "timeout": settings.timeout_s,
        "max_retries": 0,  # ModelClient is the one retry bound
        "temperature": settings.temperature,
        "max_tokens": settings.max_output_tokens,
    }
    if settings.base_url:
        kwargs["base_url"] = settings.base_url
    key = api_key(settings)
    if key:
        kwargs["api_key"] = key
    try:
        model = init_chat_model(settings.name, **kwargs)
    # Unknown provider (ValueError), integration not installed (ImportError), and whatever
    # a provider's constructor raises for missing credentials (openai.OpenAIError, ...): all
    # are configuration the operator must fix, said in one line.
    except Exception as e:
        msg = f"cannot build chat model {settings.name!r}: {truncate(str(e), 300)}"
        raise ModelNotConfigured(msg) from e
    if not isinstance(model, BaseChatModel):  # configurable models are not used here
        msg = f"{settings.name!r} did not give a chat model"
        raise ModelNotConfigured(msg)
    return model


@dataclass
class Usage:
    """What one client spent: requests sent and tokens the provider reported."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def line(self) -> str:
        return (
            f"{self.requests} model request(s), {self.input_tokens} input and "
            f"{self.output_tokens} output tokens"
        )


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) else None


def _is_timeout(error: BaseException) -> bool:
    return isinstance(error, TimeoutError) or "timeout" in type(error).__name__.lower()


def describe(error: BaseException) -> str:
    """One short line for notes and logs (provider messages can be long)."""
    status = _status(error)
    kind = type(error).__name__
    text = truncate(" ".join(str(error).split()), 200)
    return f"{kind}{f' (HTTP {status})' if status else ''}: {text}"


@dataclass
class ModelClient:
    """A chat model used by one role, with redaction, bounded retries and token accounting."""

    model: BaseChatModel
    role: Role
    redactor: Redactor
    max_attempts: int = 3
    backoff_s: float = 1.0
    sleep: Callable[[float], None] = time.sleep
    usage: Usage = field(default_factory=Usage)

    @classmethod
    def from_settings(cls, settings: ModelSettings, role: Role, redactor: Redactor) -> ModelClient:
        return cls(
            model=chat_model(settings),
            role=role,
            redactor=redactor,
            max_attempts=settings.max_attempts,
            backoff_s=settings.backoff_s,
        )

    def redact(self, message: BaseMessage) -> BaseMessage:
        content = message.content
        if isinstance(content, str):
            new: Any = self.redactor.text(content)
        else:
            new = [
                self.redactor.text(part) if isinstance(part, str) else self.redactor.data(part)
                for part in content
            ]
        update: dict[str, Any] = {"content": new}
        if isinstance(message, AIMessage) and message.tool_calls:
            update["tool_calls"] = [
                {**call, "args": self.redactor.data(call["args"])} for call in message.tool_calls
            ]
        return message.model_copy(update=update)

    def invoke(
        self,
        messages: Sequence[BaseMessage],
        parse: Callable[[AIMessage], T],
        *,
        tools: Sequence[dict[str, Any]] = (),
        tool_choice: str | None = None,
    ) -> T:
        """Send `messages` (redacted here) and return `parse(reply)`.

        `parse` raises ModelOutputInvalid for a reply it cannot use; the next attempt then
        tells the model what was wrong. Raises ModelError when the attempts are spent.
        """
        runnable: Any = (
            self.model.bind_tools(list(tools), tool_choice=tool_choice) if tools else self.model
        )
        sent = [self.redact(m) for m in messages]
        last: ModelError = ModelUnavailable("no attempt made")
        for attempt in range(1, self.max_attempts + 1):
            if attempt > 1:
                self.sleep(min(MAX_BACKOFF_S, self.backoff_s * 2 ** (attempt - 2)))
            self.usage.requests += 1
            try:
                reply = runnable.invoke(sent)
            # Any provider's client may raise its own exception types; all of them mean "no
            # answer this time", which is recorded and retried within the bound.
            except Exception as e:  # noqa: BLE001
                timeout = _is_timeout(e)
                metrics.record_request(self.role, "timeout" if timeout else "error")
                last = ModelUnavailable(describe(e))
                last.__cause__ = e
                if _status(e) in _FINAL_STATUSES:
                    break
                continue
            if not isinstance(reply, AIMessage):
                metrics.record_request(self.role, "invalid")
                last = ModelOutputInvalid(f"reply was {type(reply).__name__}, not a message")
                continue
            self._count(reply)
            try:
                value = parse(reply)
            except ModelOutputInvalid as e:
                metrics.record_request(self.role, "invalid")
                last = e
                sent = [
                    *sent,
                    self.redact(
                        HumanMessage(
                            content=f"Your previous reply could not be used: {e}. "
                            "Answer again, following the instructions exactly."
                        )
                    ),
                ]
                continue
            metrics.record_request(self.role, "ok")
            return value
        metrics.record_fallback(self.role)
        raise last

    def _count(self, reply: AIMessage) -> None:
        usage = reply.usage_metadata
        if usage is None:
            return
        self.usage.input_tokens += usage["input_tokens"]
        self.usage.output_tokens += usage["output_tokens"]
        metrics.record_tokens(self.role, usage["input_tokens"], usage["output_tokens"])
