"""What the kit does to everything an implementation supplies before it reaches a report.

An implementation controls its name, its version, its error messages, its stderr and the values it
returns; the kit shows all of them on a terminal and in JSON, JUnit and Markdown.  Three rules hold for
every such text and value:

* **credentials are redacted**: strings that look like a provider key (OpenAI/Anthropic ``sk-``, Google
  ``AIza``, GitHub, AWS, Slack, Hugging Face, Groq, xAI) or a bearer/basic token, and the value of an
  ``api_key=``/``token:``/``password=``-style assignment, become ``[redacted]`` (``docs/results.md``);
* **control characters are escaped**: C0 and C1 controls, DEL and the bidirectional overrides become
  visible ``\\xNN``/``\\uNNNN`` text, so no escape sequence reaches a terminal or a Markdown page (line
  breaks and tabs stay in multi-line texts such as a stderr tail);
* **values are strict JSON**: lone surrogates become U+FFFD, non-finite numbers become a descriptive
  string, and nesting deeper than :data:`MAX_SHOWN_DEPTH` is cut with a marker, so every results file
  is RFC 8259 JSON that any strict reader accepts.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

__all__ = ["MAX_SHOWN_DEPTH", "REDACTED", "clean_text", "escape_controls", "redact", "strict_json"]

REDACTED: Final = "[redacted]"

#: Deepest nesting of a value shown in a report; deeper parts are replaced by a marker string.
MAX_SHOWN_DEPTH: Final = 32

_KEY_PATTERNS: Final = (
    r"sk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{16,}",  # OpenAI, Anthropic, and look-alikes
    r"AIza[0-9A-Za-z_\-]{30,}",  # Google API keys
    r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"(?:AKIA|ASIA)[0-9A-Z]{16}",  # AWS access key ids
    r"xox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack
    r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"gsk_[A-Za-z0-9]{20,}",  # Groq
    r"xai-[A-Za-z0-9]{20,}",  # xAI
    r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}",  # a JSON Web Token
)
_KEYS: Final = re.compile("|".join(f"(?:{pattern})" for pattern in _KEY_PATTERNS))
_SCHEMES: Final = re.compile(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=\-]{8,}")
_ASSIGNED: Final = re.compile(
    r"(?i)\b([A-Za-z0-9_\-]*(?:api[_\-]?key|apikey|secret|token|password|passwd|credential)s?)"
    r"(\"?'?\s*[:=]\s*\"?'?)([^\s\"',;&]{6,})"
)

_BIDI: Final = "\u200e\u200f\u202a-\u202e\u2066-\u2069"  # marks and overrides that reorder text
_CONTROLS_ONE_LINE: Final = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_CONTROLS_MULTI_LINE: Final = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def redact(text: str) -> str:
    """``text`` with everything that looks like a credential replaced by ``[redacted]``."""
    text = _KEYS.sub(REDACTED, text)
    text = _SCHEMES.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    return _ASSIGNED.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, *, multi_line: bool = False) -> str:
    """``text`` with control characters as visible escapes (``ESC`` -> ``\\x1b``); with
    ``multi_line``, line feeds, carriage-return-free line breaks and tabs are kept."""
    pattern = _CONTROLS_MULTI_LINE if multi_line else _CONTROLS_ONE_LINE
    return pattern.sub(_visible, _LONE_SURROGATE.sub("\ufffd", text))


def clean_text(text: str, *, multi_line: bool = False) -> str:
    """Redacted, then escaped: what a report may show of a text an implementation supplied."""
    return escape_controls(redact(text), multi_line=multi_line)


def _clean_string(value: str) -> str:
    return redact(_LONE_SURROGATE.sub("\ufffd", value))


def strict_json(value: Any, depth: int = 0) -> Any:
    """``value`` made safe for a strict JSON writer (see the module docstring); never recurses deeper
    than :data:`MAX_SHOWN_DEPTH`."""
    if isinstance(value, str):
        return _clean_string(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else f"[not a JSON number: {value!r}]"
    if isinstance(value, dict | list | tuple):
        if depth >= MAX_SHOWN_DEPTH:
            return f"[nested deeper than {MAX_SHOWN_DEPTH} levels: not shown]"
        if isinstance(value, dict):
            return {_clean_string(str(key)): strict_json(item, depth + 1) for key, item in value.items()}
        return [strict_json(item, depth + 1) for item in value]
    return _clean_string(repr(value))
