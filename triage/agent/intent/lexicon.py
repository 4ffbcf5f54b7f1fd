"""The closed word lists the command grammar is written in (triage/agent/intent/grammar.py).

Closed on purpose: a word that is not listed here is not a verb, a filler or a kind, so it can
only be a name in a name's position, and anything else makes the clause fail to parse — which
means "no command". Every list errs on the side of not commanding.
"""

from __future__ import annotations

from policies.model import MutationAction


def _words(text: str) -> list[str]:
    """A word list written as text: one entry per whitespace-separated word."""
    return text.split()


# -- the five actions: base verbs only ("restarted", "restarting" are not commands) -----------

#: One-word verbs and the action they name.
VERBS: dict[str, MutationAction] = {
    "restart": MutationAction.ROLLOUT_RESTART,
    "scale": MutationAction.SCALE,
    "rollback": MutationAction.ROLLBACK,
    "roll": MutationAction.ROLLBACK,  # "roll back X", "roll X back"
    "undo": MutationAction.ROLLBACK,  # "undo the (last) rollout of X"
    "revert": MutationAction.ROLLBACK,  # "revert X to revision N" (a revision is required)
    "delete": MutationAction.DELETE_POD,
    "kill": MutationAction.DELETE_POD,
    "remove": MutationAction.DELETE_POD,
    "silence": MutationAction.SILENCE_CREATE,
    "mute": MutationAction.SILENCE_CREATE,
    "rollout": MutationAction.ROLLOUT_RESTART,  # "rollout restart X"
    "do": MutationAction.ROLLOUT_RESTART,  # "do a rolling restart of X"
    "set": MutationAction.SCALE,  # "set the replicas of X to N"
}

#: -ing forms, read only when looking for something to *offer* ("would you mind restarting…").
GERUNDS: dict[str, str] = {
    "restarting": "restart",
    "scaling": "scale",
    "rolling": "roll",
    "deleting": "delete",
    "killing": "kill",
    "removing": "remove",
    "silencing": "silence",
    "muting": "mute",
    "reverting": "revert",
    "undoing": "undo",
}

#: Imperative verbs that ask for something other than a change ("find out why and roll back X":
#: the clause is imperative, so the coordinated "roll back X" is a command too).
OTHER_VERBS = frozenset(
    _words(
        """
        add analyse analyze assess attach capture check collect compare confirm create debug
        describe determine diagnose dig document draft escalate evaluate explain fetch
        figure file find follow gather get give go grab grep help identify inspect
        investigate keep let list log look make monitor note notify open page paste ping
        post prepare produce pull query read record report review root-cause run see send
        share show submit summarise summarize tell trace track triage try update verify wait
        watch write
        """
    )
)

# -- what may stand before the verb, after it, or be a whole clause of its own ---------------

#: Words before the verb that leave the mood imperative ("ok", "please", "go ahead and").
LEADS = frozenset(
    _words(
        """
        please pls plz kindly ok okay k yes yeah yep yup sure alright right now so then and
        also just hey hi hello yo actually urgent urgently asap quick quickly ahead go
        """
    )
)
#: Words after a complete command that change nothing ("now", "asap", "thanks").
TRAILS = frozenset(
    _words(
        """
        please pls plz now asap immediately quickly thanks thank you thx ty too instead
        first right away again for me straight
        """
    )
)
#: A clause made only of these is a greeting, a thanks or an "ok": it neither commands nor
#: spoils the command next to it.
CHATTER = LEADS | TRAILS | frozenset(["advance", "cheers", "lol", "thx", "thanks", "ty", "in"])

#: Words that open a subordinate clause: what follows in the sentence is conditional or
#: deferred, which Triage never evaluates.
CONDITIONS = frozenset(
    _words(
        """
        if unless once when whenever after before until till assuming suppose supposing
        provided providing otherwise should lest hypothetically theoretically ideally
        eventually later tomorrow tonight someday eg ie
        """
    )
)
#: Multi-word openers with the same effect ("worst case, roll back X", "Plan B: …").
CONDITION_PHRASES = (
    ("for", "example"),
    ("for", "instance"),
    ("worst", "case"),
    ("in", "the", "worst", "case"),
    ("in", "case"),
    ("as", "soon", "as"),
    ("plan", "b"),
    ("failing", "that"),
    ("if", "needed"),
    ("even", "if"),
    ("only", "if"),
    ("as", "long", "as"),
    ("so", "long", "as"),
)
#: Conditions that restrict what came before them ("restart X, but only if Y"), unlike a new
#: condition for what follows ("scale X to 8, and if that doesn't help …").
RESTRICTING = frozenset({"only", "provided", "providing", "as", "so", "assuming", "unless"})
#: Words that make a clause a negation or a retraction.
NEGATIONS = frozenset(
    _words(
        """
        don't dont do-not never no not nobody noone nothing without stop cancel nvm neither
        nor
        """
    )
)
NEGATION_PHRASES = (
    ("do", "not"),
    ("no", "need"),
    ("no", "one"),
    ("hold", "off"),
    ("hold", "on"),
    ("never", "mind"),
    ("scratch", "that"),
    ("ignore", "that"),
    ("forget", "it"),
    ("forget", "that"),
)
#: Clauses that take back what was said before them ("restart X. nvm").
RETRACTIONS = (
    ("just", "kidding"),
    ("kidding",),
    ("jk",),
    ("nvm",),
    ("never", "mind"),
    ("nevermind",),
    ("scratch", "that"),
    ("cancel", "that"),
    ("ignore", "that"),
    ("forget", "it"),
    ("forget", "that"),
    ("actually", "no"),
    ("no", "wait"),
    ("wait",),
    ("hold", "on"),
    ("don't",),
    ("do", "not"),
    ("no", "don't"),
    ("stop",),
    ("or", "not"),
    ("maybe", "not"),
    ("on", "second", "thought"),
)
#: A clause after a command made only of these turns it into a question ("…, right").
TAGS = frozenset(_words("right correct yeah eh huh innit no"))
#: Openers of a polite question or an indirect request: offered, never executed.
POLITE = frozenset(
    _words(
        """
        can could would will won't wouldn't shall may might must should u mind let's lets
        i'd id i'll maybe perhaps probably possibly we we'll we'd let
        """
    )
)
#: Question words: a clause that starts with one is a question, "?" or not.
QUESTIONS = frozenset(
    _words(
        """
        why what what's whats how who whom whose when where which is are was were am does
        did has have had isn't aren't doesn't didn't any
        """
    )
)

# -- targets ------------------------------------------------------------------------------

DEPLOYMENT_WORDS = frozenset({"deployment", "deploy", "deployments", "deploys"})
POD_WORDS = frozenset({"pod", "pods"})
ALERT_WORDS = frozenset({"alert", "alerts", "alertname"})
#: Kinds Triage does not change: "restart statefulset redis" is no command.
OTHER_KINDS = frozenset(
    _words(
        """
        statefulset statefulsets sts daemonset daemonsets ds replicaset replicasets rs job
        jobs cronjob cronjobs service services svc node nodes namespace namespaces ns
        cluster clusters hpa hpas configmap configmaps cm secret secrets ingress ingresses
        pvc pvcs container containers app apps workload workloads silence silences revision
        replicas replica instance instances release releases helm chart
        """
    )
)
#: Never a name: pronouns, determiners, bulk words, prepositions, conjunctions, fillers.
NOT_NAMES = (
    frozenset(
        _words(
            """
        it its it's this that these those them they their one ones him her me us you your my
        our his the a an some any every each all both none other another everything anything
        something everyone whole rest in on at to for of from with by into onto up down back
        out off over and or but then if unless when while once so as is are was be been
        being only just also well long
        """
        )
    )
    | LEADS
    | TRAILS
    | CONDITIONS
    | NEGATIONS
    | DEPLOYMENT_WORDS
    | POD_WORDS
    | ALERT_WORDS
    | OTHER_KINDS
    | frozenset(VERBS)
)
#: Bulk targets and selectors: "restart everything", "delete all pods".
BULK = frozenset({"all", "every", "everything", "each", "any", "whole", "both"})

# -- numbers and durations ------------------------------------------------------------------

NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "ninety": 90, "hundred": 100}

UNIT_SECONDS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
}

# -- other languages -----------------------------------------------------------------------

#: Frequent words of German, Spanish, French, Portuguese and Italian (function words, "please",
#: "not", and the verbs of the five actions) that are not English words. A message in which one
#: occurs is not wholly in English, so it commands nothing: a foreign word can reverse the
#: meaning without looking like a negation to an English grammar. Scripts other than Latin
#: (Japanese, Chinese, Korean, Cyrillic…) and accented letters are caught by their characters.
FOREIGN = frozenset(
    _words(
        """
        bitte danke nicht nichts kein keine keinen neu und oder aber der das den dem des ein
        eine einen im ist sind warum wieso kannst könntest du mir mich nur noch auch starte
        neustarten restarten neustart sag skaliere skalieren lösche loesche rolle zurück
        zurueck stumm schalte mach mache auf mit von für fuer wie bei zum zur el los las del
        al en por para con sin qué que porque favor gracias reinicia reinicie reinicies
        reiniciar escala escalar elimina borra revierte silencia silenciar solo investiga
        durante horas minutos réplicas cuando donde pourquoi redémarre redemarre relance
        supprime annule merci depuis renvoie avec sans est pas le les du un une et pour ne
        sur não nao obrigado reinicie apague reverta silencie os dos das na il lo gli della
        nel non perché perche grazie riavvia scala cancella ripristina silenzia repliche
        """
    )
)
