"""Redact e-mail addresses, phone numbers, IBANs and payment card numbers from a text file.

Usage: redact_pii.py TEXT_FILE [--keep CATEGORY ...] [--output REDACTED_FILE]

Prints JSON: {"redacted_text": ..., "counts": {...}, "findings": [{"category", "start",
"end"}]}. Positions refer to the original text. IBANs must pass the ISO 13616 mod-97
check and card numbers the Luhn check, so ordinary reference numbers are left alone.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

PLACEHOLDERS = {"email": "[EMAIL]", "iban": "[IBAN]", "card": "[CARD]", "phone": "[PHONE]"}

EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")
CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,5}\)[ .-]?)?\d{2,5}(?:[ .-]?\d{2,5}){1,4}(?!\w)"
)


def iban_is_valid(candidate: str) -> bool:
    """ISO 13616: move the first four characters to the end, letters to numbers, mod 97."""
    compact = candidate.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    digits = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(digits) % 97 == 1


def luhn_is_valid(candidate: str) -> bool:
    """The Luhn checksum used by payment card numbers."""
    digits = [int(ch) for ch in candidate if ch.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def phone_is_plausible(candidate: str) -> bool:
    """At least 7 digits, and written like a phone number rather than a plain amount."""
    digits = sum(ch.isdigit() for ch in candidate)
    return 7 <= digits <= 15 and (candidate.startswith(("+", "(", "0")) or " " in candidate)


def find_pii(text: str, keep: set[str]) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, category) spans, earlier categories winning overlaps."""
    checks = [
        ("email", EMAIL, None),
        ("iban", IBAN, iban_is_valid),
        ("card", CARD, luhn_is_valid),
        ("phone", PHONE, phone_is_plausible),
    ]
    taken: list[tuple[int, int, str]] = []
    for category, pattern, valid in checks:
        if category in keep:
            continue
        for match in pattern.finditer(text):
            start, end = match.span()
            if valid is not None and not valid(match.group()):
                continue
            if any(start < other_end and other_start < end for other_start, other_end, _ in taken):
                continue
            taken.append((start, end, category))
    return sorted(taken)


def redact(text: str, keep: set[str]) -> dict[str, object]:
    """The redacted text, the count per category and where each redaction was made."""
    spans = find_pii(text, keep)
    pieces: list[str] = []
    position = 0
    counts = dict.fromkeys(PLACEHOLDERS, 0)
    for start, end, category in spans:
        pieces.append(text[position:start])
        pieces.append(PLACEHOLDERS[category])
        position = end
        counts[category] += 1
    pieces.append(text[position:])
    findings = [{"category": c, "start": s, "end": e} for s, e, c in spans]
    return {"redacted_text": "".join(pieces), "counts": counts, "findings": findings}


def main(argv: list[str] | None = None) -> int:
    """Redact the file named on the command line and print the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("text_file", type=Path)
    parser.add_argument("--keep", action="append", default=[], choices=sorted(PLACEHOLDERS))
    parser.add_argument("--output", type=Path, help="also write the redacted text here")
    args = parser.parse_args(argv)
    try:
        text = args.text_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"cannot read {args.text_file}: {exc}", file=sys.stderr)
        return 2
    result = redact(text, set(args.keep))
    if args.output is not None:
        args.output.write_text(str(result["redacted_text"]), encoding="utf-8")
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
