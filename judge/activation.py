"""Which check a run gets: decided from the kind of request and the operator's policy.

Casual chat runs no check; a find-or-tell request is judged by its answer; anything that keeps,
sends or changes something is checked against the system of record. An operator can switch
checking off, and then no run can be `verified`: outcomes say `unchecked`.
"""

from __future__ import annotations

from enum import StrEnum

from policies.verification import Check, VerificationPolicy
from triage.core.models import RequestKind


class Activation(StrEnum):
    NONE = "none"  # casual: nothing to check
    ANSWER = "answer"  # judged by the answer
    RECORD = "record"  # the answer and the deliverable in the system of record
    OFF = "off"  # an operator switched checking off


def decide(kind: RequestKind, policy: VerificationPolicy) -> Activation:
    rules = policy.activation
    check = {
        RequestKind.CASUAL: rules.casual,
        RequestKind.FIND_TELL: rules.find_tell,
        RequestKind.KEEP_SEND_CHANGE: rules.keep_send_change,
    }[kind]
    if check is Check.NONE:
        return Activation.NONE
    if not policy.enabled:
        return Activation.OFF
    return Activation.RECORD if check is Check.RECORD else Activation.ANSWER


def delivers(kind: RequestKind, policy: VerificationPolicy) -> bool:
    """Does this kind of request get a deliverable in the system of record (an RCAReport)?

    Independent of `enabled`: switching the check off never stops the delivery itself."""
    rules = policy.activation
    check = {
        RequestKind.CASUAL: rules.casual,
        RequestKind.FIND_TELL: rules.find_tell,
        RequestKind.KEEP_SEND_CHANGE: rules.keep_send_change,
    }[kind]
    return check is Check.RECORD
