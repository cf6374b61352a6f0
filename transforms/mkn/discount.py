"""Count-of-counts and the Modified Kneser-Ney discounts of each order, with an explicit fallback.

Chen & Goodman's estimate (their eq. 26), as KenLM computes it:
Y = t1 / (t1 + 2 t2), D_k = k - (k+1) Y t_{k+1} / t_k for k = 1, 2, 3, where
t_k is the number of n-grams of the order whose adjusted count is exactly k.
KenLM rejects the estimate when t1, t2 or t3 is 0 or some D_k falls outside
[0, k]; it then needs fallback discounts (its --discount_fallback default is
0.5 1 1.5) or stops. Google's counts are pruned (total >= 40), so their highest
order has t1 = t2 = t3 = 0 and always takes this path.
"""

from dataclasses import astuple, dataclass

from ngramflow.transforms.mkn.adjust import FLOOR, ORIGINS, SUFFIX

#: KenLM's fallback discounts D1, D2, D3+.
KENLM_FALLBACK = (0.5, 1.0, 1.5)
ESTIMATED, FALLBACK = "estimated", "fallback"


class DiscountError(ValueError):
    """Discounts cannot be estimated and no fallback was allowed.

    The message starts with ``MARKER`` so the command line can find it inside
    the runner's wrapped exceptions and show it as one line.
    """

    MARKER = "ngramflow mkn error: "

    def __init__(self, reason: str):
        # Beam re-raises a failed step's exception as type(err)(its message + where), so mark only once.
        super().__init__(reason if reason.startswith(self.MARKER) else self.MARKER + reason)


@dataclass(frozen=True)
class Discounts:
    d1: float
    d2: float
    d3plus: float


def estimate(order: int, t: tuple) -> tuple[Discounts | None, str | None]:
    """(discounts, None) from count-of-counts t = (t1, t2, t3, t4), or (None, why not)."""
    for k in (1, 2, 3):
        if t[k - 1] == 0:
            return None, f"no {order}-grams have adjusted count {k} (t{k} = 0)"
    y = t[0] / (t[0] + 2 * t[1])
    amounts = [k - (k + 1) * y * t[k] / t[k - 1] for k in (1, 2, 3)]
    for k, amount in enumerate(amounts, 1):
        if not 0 <= amount <= k:
            return None, f"D{k} = {amount:.6g} for {order}-grams is outside [0, {k}]"
    return Discounts(*amounts), None


def discount_record(order: int, summary: list, fallback: tuple | None, highest: bool) -> dict:
    """One order's statistics and discounts, as the manifest records them.

    ``summary`` is the order's summary (SUMMARY_FIELDS numbers; more are ignored). With ``fallback`` None an order
    that cannot be estimated raises DiscountError, which says what to do.
    """
    t = tuple(summary[1:5])
    discounts, reason = estimate(order, t)
    if highest and summary[0] and t[0] == 0:
        reason += "; the counts look pruned, as Google's are (published only with a total >= 40)"
    if discounts is None and fallback is None:
        raise DiscountError(f"cannot estimate Kneser-Ney discounts: {reason}; rerun with --discount-fallback "
                            f"D1 D2 D3 (KenLM's default: {' '.join(f'{d:g}' for d in KENLM_FALLBACK)})")
    origins = dict(zip(ORIGINS, summary[5:]))
    return {
        "order": order,
        "ngrams": summary[0],
        "count_of_counts": list(t),
        "discounts": list(astuple(discounts or Discounts(*fallback))),
        "discount_source": ESTIMATED if discounts else FALLBACK,
        "fallback_reason": reason,
        "suffix_ngrams_added": origins[SUFFIX],
        "continuation_floor_applied": origins[FLOOR],
    }


def discounts_of(record: dict) -> Discounts:
    return Discounts(*record["discounts"])


#: An order's summary (adjust.adjust_bucket): n-grams, t1..t4, one count per origin.
SUMMARY_FIELDS = 5 + len(ORIGINS)


def add_summaries(summaries) -> list:
    """The summary of an order from those of its buckets (field by field)."""
    return [sum(column) for column in zip(*summaries)]


def discount_table(summaries, model_order: int, fallback: tuple | None) -> dict:
    """{order: discount record} for every order 1..N, from (order, summary) pairs of the orders seen."""
    by_order = dict(summaries)
    empty = [0] * SUMMARY_FIELDS
    return {order: discount_record(order, by_order.get(order, empty), fallback, order == model_order)
            for order in range(1, model_order + 1)}
