"""One budget per run, shared by the worker and the judge, in tokens and in money.

The budget does not count by itself: it reads the `Usage` of each role's `ModelClient` (what
the provider reported, request by request), so nothing spent can escape it. Money comes from
the operator's pricing table; a model without a price cannot be costed, and then only the
attempt limit (and the token cap, if set) bounds the run — `notes()` says so, and the metrics
count the estimate as unpriced.

Checks happen between steps and before each model call (`can_afford`, from an estimate of the
prompt and the reply cap), so a run stops before a call it cannot pay for rather than after.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies.verification import Budget as BudgetPolicy
from policies.verification import Price
from triage.core.llm import Usage
from triage.core.metrics import Role


@dataclass
class _Meter:
    role: Role
    model: str | None
    usage: Usage
    price: Price | None


@dataclass(frozen=True)
class RoleSpend:
    role: Role
    model: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None: no price for this model

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class Budget:
    def __init__(self, policy: BudgetPolicy, pricing: dict[str, Price]) -> None:
        self.policy = policy
        self.pricing = pricing
        self._meters: list[_Meter] = []

    def track(self, role: Role, model: str | None, usage: Usage) -> None:
        """Count `usage` (a ModelClient's, updated as it works) against this budget."""
        price = self.pricing.get(model) if model else None
        self._meters.append(_Meter(role, model, usage, price))

    def by_role(self) -> list[RoleSpend]:
        spends: list[RoleSpend] = []
        for m in self._meters:
            cost = (
                None
                if m.price is None
                else (
                    m.usage.input_tokens * m.price.input_per_mtok
                    + m.usage.output_tokens * m.price.output_per_mtok
                )
                / 1_000_000
            )
            spends.append(
                RoleSpend(m.role, m.model, m.usage.input_tokens, m.usage.output_tokens, cost)
            )
        return spends

    def tokens(self) -> int:
        return sum(s.tokens for s in self.by_role())

    def cost_usd(self) -> float:
        """Cost of what could be priced (unpriced models count 0 here; see `unpriced`)."""
        return sum(s.cost_usd or 0.0 for s in self.by_role())

    def unpriced(self) -> list[str]:
        """Models that have been (or will be) used with no price in the table."""
        return sorted({m.model for m in self._meters if m.model and m.price is None})

    def _cost_capped(self) -> bool:
        return self.policy.max_cost_usd is not None and not self.unpriced()

    def exhausted(self) -> bool:
        cap = self.policy.max_tokens
        if cap is not None and self.tokens() >= cap:
            return True
        return self._cost_capped() and self.cost_usd() >= float(self.policy.max_cost_usd or 0)

    def can_afford(self, role: Role, input_tokens: int, output_tokens: int) -> bool:
        """Would a call of this size by `role` stay within the budget?"""
        cap = self.policy.max_tokens
        if cap is not None and self.tokens() + input_tokens + output_tokens > cap:
            return False
        if not self._cost_capped():
            return True
        price = next((m.price for m in self._meters if m.role == role), None)
        if price is None:
            return True
        extra = (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1e6
        return self.cost_usd() + extra <= float(self.policy.max_cost_usd or 0)

    def notes(self) -> list[str]:
        notes = []
        if self.unpriced() and self.policy.max_cost_usd is not None:
            notes.append(
                f"no price for {', '.join(self.unpriced())}: cost is not bounded; only the "
                "attempt limit"
                + (" and the token cap apply" if self.policy.max_tokens is not None else " applies")
            )
        return notes

    def summary(self) -> dict[str, object]:
        """Plain data for the RCAReport's status and JSON output."""
        return {
            "tokens": self.tokens(),
            "cost_usd": round(self.cost_usd(), 6),
            "priced": not self.unpriced(),
            "max_tokens": self.policy.max_tokens,
            "max_cost_usd": self.policy.max_cost_usd,
            "by_role": [
                {
                    "role": s.role,
                    "model": s.model,
                    "input_tokens": s.input_tokens,
                    "output_tokens": s.output_tokens,
                    "cost_usd": None if s.cost_usd is None else round(s.cost_usd, 6),
                }
                for s in self.by_role()
            ],
        }
