"""Recompute the totals of an invoice JSON file with exact decimal arithmetic.

Usage: normalise_totals.py INVOICE.json [--output NORMALISED.json]

Every line total is recomputed as quantity * unit_price - discount, then the subtotal, the
tax per rate (on the sum of the lines at that rate, rounded half-up to the currency's minor
unit) and the grand total. The script prints one JSON object:

    {"invoice": {...normalised...}, "discrepancies": [...], "tax_breakdown": [...],
     "consistent": true|false}

Each discrepancy names the field, the value printed on the invoice and the computed one.
Exit status: 0 when the invoice could be normalised (with or without discrepancies),
2 when the file is not a usable invoice record.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

MINOR_UNITS = {"JPY": 0, "KRW": 0, "ISK": 0, "CLP": 0, "BHD": 3, "KWD": 3, "OMR": 3, "JOD": 3}
TOLERANCE = Decimal("0")


class InvoiceError(ValueError):
    """The input cannot be read as an invoice record."""


def parse_amount(value: Any, field: str) -> Decimal:
    """Read a number written as JSON number or text ("1,234.50", "1.234,50", "€ 12")."""
    if isinstance(value, bool) or value is None:
        raise InvoiceError(f"{field}: expected an amount, found {value!r}")
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str):
        raise InvoiceError(f"{field}: expected an amount, found {type(value).__name__}")
    text = re.sub(r"[^\d,.\-+]", "", value.replace("\u2212", "-"))
    if "," in text and "." in text:
        # The separator that comes last is the decimal one.
        if text.rfind(",") > text.rfind("."):
            text = text.replace(".", "").replace(",", ".")
        else:
            text = text.replace(",", "")
    elif "," in text:
        head, _, tail = text.rpartition(",")
        # "12,50" is a decimal comma; "1,250" or "1,250,000" are thousands.
        text = f"{head.replace(',', '')}.{tail}" if len(tail) != 3 else text.replace(",", "")
    try:
        return Decimal(text)
    except InvalidOperation:
        raise InvoiceError(f"{field}: {value!r} is not an amount") from None


def parse_rate(value: Any, field: str) -> Decimal:
    """A tax rate as a fraction: "20%" and 20 become 0.20, 0.2 stays 0.2."""
    is_percent = isinstance(value, str) and value.strip().endswith("%")
    rate = parse_amount(value, field)
    if is_percent or rate > 1:
        rate = rate / 100
    if rate < 0:
        raise InvoiceError(f"{field}: a tax rate cannot be negative ({value!r})")
    return rate


def money(amount: Decimal, exponent: int) -> Decimal:
    """Round half-up to the currency's minor unit."""
    return amount.quantize(Decimal(1).scaleb(-exponent), rounding=ROUND_HALF_UP)


def as_text(amount: Decimal) -> str:
    """Amounts leave the script as strings so no float rounding creeps back in."""
    return format(amount, "f")


def normalise(invoice: dict[str, Any]) -> dict[str, Any]:
    """Recompute an invoice's totals; return the result object the script prints."""
    currency = str(invoice.get("currency") or "").upper()
    exponent = MINOR_UNITS.get(currency, 2)
    lines = invoice.get("line_items")
    if not isinstance(lines, list) or not lines:
        raise InvoiceError("line_items: expected a non-empty list of line objects")
    default_rate = (
        parse_rate(invoice["tax_rate"], "tax_rate") if invoice.get("tax_rate") is not None else None
    )
    discrepancies: list[dict[str, str]] = []

    def compare(field: str, stated: Any, computed: Decimal) -> None:
        if stated is None:
            return
        printed = parse_amount(stated, field)
        if abs(printed - computed) > TOLERANCE:
            discrepancies.append(
                {
                    "field": field,
                    "stated": as_text(printed),
                    "computed": as_text(computed),
                    "difference": as_text(computed - printed),
                }
            )

    net_by_rate: dict[Decimal, Decimal] = {}
    normalised_lines = []
    for index, line in enumerate(lines):
        where = f"line_items[{index}]"
        if not isinstance(line, dict):
            raise InvoiceError(f"{where}: expected an object")
        quantity = parse_amount(line.get("quantity", 1), f"{where}.quantity")
        if "unit_price" not in line:
            raise InvoiceError(f"{where}.unit_price: missing")
        unit_price = parse_amount(line["unit_price"], f"{where}.unit_price")
        discount = parse_amount(line.get("discount", 0), f"{where}.discount")
        line_total = money(quantity * unit_price - discount, exponent)
        compare(f"{where}.line_total", line.get("line_total"), line_total)
        if line.get("tax_rate") is not None:
            rate = parse_rate(line["tax_rate"], f"{where}.tax_rate")
        elif default_rate is not None:
            rate = default_rate
        else:
            raise InvoiceError(f"{where}.tax_rate: missing, and the invoice has no tax_rate")
        net_by_rate[rate] = net_by_rate.get(rate, Decimal(0)) + line_total
        fixed = dict(line)
        fixed.update(
            quantity=as_text(quantity),
            unit_price=as_text(unit_price),
            tax_rate=as_text(rate),
            line_total=as_text(line_total),
        )
        if "discount" in line:
            fixed["discount"] = as_text(discount)
        normalised_lines.append(fixed)

    shipping = money(parse_amount(invoice.get("shipping", 0), "shipping"), exponent)
    if shipping:
        if default_rate is None:
            raise InvoiceError("shipping: needs the invoice's tax_rate to be taxed")
        net_by_rate[default_rate] = net_by_rate.get(default_rate, Decimal(0)) + shipping
    subtotal = sum((Decimal(line["line_total"]) for line in normalised_lines), Decimal(0))
    breakdown = [
        {"rate": as_text(rate), "net": as_text(net), "tax": as_text(money(net * rate, exponent))}
        for rate, net in sorted(net_by_rate.items())
    ]
    tax_total = sum((Decimal(row["tax"]) for row in breakdown), Decimal(0))
    total = subtotal + shipping + tax_total
    compare("subtotal", invoice.get("subtotal"), subtotal)
    compare("tax_total", invoice.get("tax_total"), tax_total)
    compare("total", invoice.get("total"), total)

    result = dict(invoice)
    result.update(
        currency=currency or None,
        line_items=normalised_lines,
        subtotal=as_text(subtotal),
        tax_total=as_text(tax_total),
        total=as_text(total),
    )
    if shipping:
        result["shipping"] = as_text(shipping)
    if default_rate is not None:
        result["tax_rate"] = as_text(default_rate)
    return {
        "invoice": result,
        "discrepancies": discrepancies,
        "tax_breakdown": breakdown,
        "consistent": not discrepancies,
    }


def main(argv: list[str] | None = None) -> int:
    """Read the invoice named on the command line, print the normalised result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("invoice", type=Path, help="the invoice record, a JSON file")
    parser.add_argument("--output", type=Path, help="also write the normalised invoice here")
    args = parser.parse_args(argv)
    try:
        data = json.loads(args.invoice.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise InvoiceError("the file must hold one JSON object")
        result = normalise(data)
    except (OSError, json.JSONDecodeError, InvoiceError) as exc:
        print(json.dumps({"error": f"{args.invoice}: {exc}"}), file=sys.stderr)
        return 2
    if args.output is not None:
        args.output.write_text(json.dumps(result["invoice"], indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
