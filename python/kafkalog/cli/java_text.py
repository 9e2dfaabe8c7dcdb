"""Java's text conversions that ``kafkalog dump`` must reproduce byte for byte.

``java_utf8`` is ``new String(bytes, StandardCharsets.UTF_8)`` (what Kafka's StringDecoder
does): valid UTF-8 decodes as Python decodes it, but malformed input is replaced the way the
JDK's decoder replaces it, which differs from Python's ``errors="replace"`` (an encoded
surrogate such as ED A0 80 is one U+FFFD in Java and three in Python; a truncated sequence
is cut at other places). Thread-safe: pure functions.
"""

from __future__ import annotations

__all__ = ["java_utf8"]

REPL = "\ufffd"


def java_utf8(b: bytes) -> str:
    """``new String(b, UTF_8)``."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return _decode_replacing(b)


def _cont(b: int) -> bool:
    return b & 0xC0 == 0x80


def _malformed3(b1: int, b2: int) -> bool:
    return (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _cont(b2)


def _malformed4_2(b1: int, b2: int) -> bool:
    return (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and b2 & 0xF0 != 0x80) or not _cont(b2)


def _decode_replacing(src: bytes) -> str:  # noqa: C901 (one branch per lead byte kind, as the JDK)
    out: list[str] = []
    sp, sl = 0, len(src)
    while sp < sl:
        b1 = src[sp]
        sp += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif b1 >> 5 == 0b110 and b1 & 0x1E:  # C2..DF
            if sp < sl:
                b2 = src[sp]
                if _cont(b2):
                    out.append(chr(((b1 & 0x1F) << 6) | (b2 & 0x3F)))
                    sp += 1
                else:
                    out.append(REPL)
                continue
            out.append(REPL)
            break
        elif b1 >> 4 == 0b1110:  # E0..EF
            if sp + 1 < sl:
                b2, b3 = src[sp], src[sp + 1]
                if _malformed3(b1, b2) or not _cont(b3):
                    out.append(REPL)
                    sp += 0 if _malformed3(b1, b2) else 1
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append(REPL if 0xD800 <= c <= 0xDFFF else chr(c))
                    sp += 2
                continue
            if sp < sl and _malformed3(b1, src[sp]):
                out.append(REPL)
                continue
            out.append(REPL)
            break
        elif b1 >> 3 == 0b11110:  # F0..F7
            if sp + 2 < sl:
                b2, b3, b4 = src[sp], src[sp + 1], src[sp + 2]
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if not (_cont(b2) and _cont(b3) and _cont(b4)) or not 0x10000 <= uc <= 0x10FFFF:
                    out.append(REPL)
                    if b1 > 0xF4 or _malformed4_2(b1, b2):
                        pass
                    elif not _cont(b3):
                        sp += 1
                    else:
                        sp += 2
                else:
                    out.append(chr(uc))
                    sp += 3
                continue
            if b1 > 0xF4 or (sp < sl and _malformed4_2(b1, src[sp])):
                out.append(REPL)
                continue
            sp += 1
            out.append(REPL)
            if sp < sl and not _cont(src[sp]):
                continue
            break
        else:
            out.append(REPL)
    return "".join(out)
