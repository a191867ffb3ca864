"""Word lists for the synthetic benchmark: domains, aspects, fact templates, query templates.

Kept apart from the generator so that the text can grow without touching the logic. Every template slot is
filled from :data:`VALUES`. ``{target}`` in a link template is the name of the entity an edge points to.
"""

from __future__ import annotations

from typing import Any

#: Per domain: entity types with weights, aspects, the session rhythm (mean hour, hour spread, share of
#: sessions on weekdays), and a name style.
DOMAINS: dict[str, dict[str, Any]] = {
    "work": {
        "types": {"project": 0.5, "task": 0.3, "person": 0.2},
        "aspects": ["goals", "status", "design_preferences", "procedures", "deadlines"],
        "hour": (10.5, 1.5),
        "weekday": 0.92,
    },
    "people": {
        "types": {"person": 1.0},
        "aspects": ["role", "preferences", "contact", "schedule", "working_style"],
        "hour": (13.0, 2.5),
        "weekday": 0.7,
    },
    "infrastructure": {
        "types": {"system": 0.6, "tool": 0.4},
        "aspects": ["configuration", "deployment", "monitoring", "runbook", "ownership"],
        "hour": (9.0, 1.2),
        "weekday": 0.95,
    },
    "research": {
        "types": {"concept": 0.6, "skill": 0.2, "project": 0.2},
        "aspects": ["findings", "methods", "open_questions", "references"],
        "hour": (15.5, 2.0),
        "weekday": 0.8,
    },
    "personal": {
        "types": {"task": 0.4, "concept": 0.3, "person": 0.3},
        "aspects": ["habits", "preferences", "health", "plans", "family"],
        "hour": (20.5, 1.5),
        "weekday": 0.3,
    },
}

#: Aspects whose facts say what to do (the *action* intent reads them).
PROCEDURAL_ASPECTS = {"procedures", "runbook", "deadlines", "plans", "methods", "schedule"}
#: Aspects whose facts are preferences (the drift scenario changes these).
PREFERENCE_ASPECTS = {"design_preferences", "preferences", "working_style", "habits"}

VALUES: dict[str, list[str]] = {
    "num": [str(n) for n in (2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 45, 60, 90, 120, 250, 500)],
    "weekday": ["monday", "tuesday", "wednesday", "thursday", "friday"],
    "lang": ["rust", "python", "typescript", "go", "kotlin", "elixir", "haskell", "julia"],
    "store": ["postgres", "sqlite", "redis", "s3", "clickhouse", "duckdb", "cassandra"],
    "region": ["frankfurt", "oregon", "tokyo", "dublin", "sydney", "montreal"],
    "level": ["debug", "info", "warning", "error"],
    "pipeline": ["github actions", "buildkite", "jenkins", "argo", "a shell script"],
    "metric": ["latency", "error budget", "queue depth", "memory pressure", "disk usage"],
    "style": ["small pull requests", "written proposals", "pairing", "async updates", "long focus blocks"],
    "food": ["oatmeal", "ramen", "dark chocolate", "green tea", "sourdough", "lentil soup"],
    "sport": ["running", "climbing", "swimming", "cycling", "yoga", "rowing"],
    "place": ["the harbour", "the old library", "the allotment", "the studio", "the lake house"],
    "topic": [
        "retrieval",
        "graph neural networks",
        "bandits",
        "causal inference",
        "tokenizers",
        "calibration",
        "active learning",
        "sparse attention",
    ],
    "method": [
        "ablations",
        "bootstrap intervals",
        "held-out time splits",
        "grid sweeps",
        "paired comparisons",
        "synthetic probes",
    ],
    "role": ["tech lead", "designer", "product manager", "on-call engineer", "researcher", "mentor"],
    "tone": ["direct feedback", "gentle reminders", "detailed notes", "short summaries"],
    "month": ["january", "march", "may", "july", "september", "november"],
    "color": ["teal", "amber", "slate", "crimson", "olive"],
}

#: Fact templates per aspect. Facts never contain the owning entity's name.
FACTS: dict[str, list[str]] = {
    "goals": [
        "aims to cut {metric} by {num} percent",
        "wants a public beta by {month}",
        "the north star is fewer manual steps",
        "should replace the legacy {store} layer",
    ],
    "status": [
        "currently blocked on a review",
        "about {num} percent done",
        "paused until {month}",
        "shipped the {lang} rewrite of the parser",
    ],
    "design_preferences": [
        "prefers {style} over meetings",
        "favours {lang} for new services",
        "keeps the interface in {color} and grey",
        "likes {store} for local state",
    ],
    "procedures": [
        "release checklist starts with a {pipeline} dry run",
        "tag builds every {weekday}",
        "file a ticket before touching {store} schemas",
    ],
    "deadlines": [
        "milestone review on {weekday}",
        "hard deadline at the end of {month}",
        "demo slot every second {weekday}",
    ],
    "role": ["works as {role}", "acts as {role} for the team", "became {role} in {month}"],
    "preferences": [
        "prefers {tone}",
        "enjoys {food} at lunch",
        "prefers {style}",
        "likes meetings after {num} am",
    ],
    "contact": ["reachable on the {color} channel", "answers mail within {num} hours"],
    "schedule": ["free on {weekday} afternoons", "out of office in {month}", "starts work at {num} am"],
    "working_style": ["likes {style}", "asks for {tone}", "thinks best during {sport}"],
    "configuration": [
        "listens on port {num}0",
        "stores state in {store}",
        "log level is {level}",
        "retries {num} times before failing over",
    ],
    "deployment": [
        "deploys through {pipeline}",
        "runs {num} replicas in {region}",
        "rolls out behind a canary stage",
    ],
    "monitoring": [
        "pages when {metric} exceeds {num}",
        "dashboards live in the {color} folder",
        "alerts route to the {region} rotation",
    ],
    "runbook": [
        "restart the workers before clearing {store}",
        "drain traffic from {region} first",
        "escalate to the {role} after {num} minutes",
    ],
    "ownership": ["maintained by the {color} squad", "budget owner changes in {month}"],
    "findings": [
        "{method} show a gain on {topic}",
        "the effect vanishes without {method}",
        "results on {topic} hold across {num} seeds",
    ],
    "methods": [
        "evaluated with {method}",
        "compares against a {topic} baseline",
        "uses {lang} notebooks for analysis",
    ],
    "open_questions": ["unclear whether {topic} transfers", "needs more {method}"],
    "references": ["builds on the {month} workshop paper", "cites the {topic} survey"],
    "habits": ["goes {sport} every {weekday}", "journals before bed", "drinks {food} in the morning"],
    "health": ["physio for the knee every {weekday}", "avoids {food} lately", "sleeps better after {sport}"],
    "plans": ["trip to {place} in {month}", "wants to learn {lang}", "repaint the hall {color}"],
    "family": ["visits {place} with the kids", "birthday dinner in {month}"],
}

#: Constraint templates per aspect (``kind='constraint'``): rules that always apply.
CONSTRAINTS: dict[str, list[str]] = {
    "procedures": ["never merge without two approvals", "must not ship on {weekday}s"],
    "deadlines": ["must freeze scope {num} days before a demo"],
    "runbook": ["never restart {store} during business hours", "must page the {role} before failover"],
    "deployment": ["must not deploy on {weekday}s", "requires a rollback plan for every release"],
    "configuration": ["must keep secrets out of environment files"],
    "methods": ["must report seeds and spread", "never tune on the test split"],
    "schedule": ["no meetings before {num} am"],
    "health": ["must avoid {food} entirely"],
    "plans": ["never book travel in {month}"],
    "preferences": ["do not schedule calls on {weekday}s"],
}

#: Phrases that state an edge in words, per dependency type.
LINKS: dict[str, list[str]] = {
    "uses": ["relies on {target} for {metric} data", "calls {target} for lookups"],
    "requires": ["cannot start without {target}", "needs {target} to be healthy"],
    "owned_by": ["owned by {target}", "{target} signs off on changes"],
    "blocks": ["waiting on {target} before the next step", "blocked until {target} is resolved"],
    "informs": ["shaped by what {target} found", "feeds results to {target}"],
}

#: Latent values planted as principles; each has paraphrases that share few words.
PRINCIPLES: dict[str, list[str]] = {
    "privacy": [
        "keeps personal data out of logs",
        "refuses analytics that track people",
        "encrypts notes by default",
        "shares nothing without consent",
    ],
    "simplicity": [
        "picks the boring option when in doubt",
        "deletes code before adding more",
        "one tool per job, no frameworks on top",
        "avoids clever abstractions",
    ],
    "reproducibility": [
        "pins every dependency version",
        "records the seed of every run",
        "rebuilds results from raw data",
        "keeps a lab notebook for each change",
    ],
    "rest": [
        "protects weekends from work",
        "logs off at six",
        "no screens after ten",
        "takes a full week off each quarter",
    ],
    "writing": [
        "writes decisions down before acting",
        "keeps a changelog in plain prose",
        "answers questions with a short doc",
        "summarises every meeting in writing",
    ],
}

#: Facts shared verbatim by two entities of different domains with no edge between them.
BRIDGE_FACTS: list[str] = [
    "the quarterly review falls on the first {weekday} of {month}",
    "uses the {color} notebook for anything about {topic}",
    "the {region} trip overlaps with the {pipeline} migration",
    "budget for {store} licences comes from the shared pot",
    "the {sport} club and the standup share the {num} am slot",
]

#: Lexical distractors: configuration values, account ids, timeouts, worded like queries.
DISTRACTOR_FACTS: list[str] = [
    "account id {num}-{num}{num} changed on the billing page",
    "timeout set to {num} seconds for what it relates to",
    "config value max_{metric} = {num} (what to do if it changes: nothing)",
    "ticket {num}{num} about how this relates to the old setup, closed",
    "api key rotated; what changed is only the prefix",
]
DISTRACTOR_MEMORIES: list[str] = [
    "{name}: what changed? only the account id ({num}{num}), nothing to do",
    "reminder: {name} timeout is {num}s; how it relates to anything else is unclear",
    "{name} config dump — what should I do with max_{metric}={num}? ignore it",
]

CHITCHAT_MEMORIES: list[str] = [
    "good morning, coffee first",
    "that was a long day",
    "lunch was great today",
    "thanks, that worked",
    "back from the break",
    "it is raining again",
]

#: Query templates per intent. ``{x}``/``{y}`` are entity names, ``{aspect}`` an aspect in words.
QUERIES: dict[str, list[str]] = {
    "what": [
        "what do I know about {x}'s {aspect}?",
        "tell me about the {aspect} of {x}",
        "what is the {aspect} of {x}?",
        "remind me of {x} {aspect}",
    ],
    "what_hop": [
        "what does {x} depend on?",
        "what should I know about the things {x} needs?",
        "what is behind {x}?",
    ],
    "relate": [
        "how does {x} relate to {y}?",
        "what connects {x} and {y}?",
        "is there a link between {x} and {y}?",
    ],
    "action": [
        "what should I do about {x}?",
        "how should I handle {x} now?",
        "I need to work on {x}, anything I must keep in mind?",
    ],
    "changed": [
        "what changed about {x}'s {aspect}?",
        "has the {aspect} of {x} changed?",
        "what is new in {x} {aspect}?",
    ],
    "none": [
        "lol nice",
        "we shipped it!! 🎉",
        "good morning",
        "thanks, that helped a lot",
        "haha ok",
        "finally done with the milestone!!",
        "brb, coffee",
        "sounds good",
        "wow that was fast",
        "great work everyone",
    ],
}

SYLLABLES = [c + v for c in "bdfgklmnprstvzchjw" for v in "aeiou"]
NAME_SUFFIX: dict[str, list[str]] = {
    "system": ["api", "db", "queue", "cache", "gateway", "worker", "store"],
    "tool": ["cli", "ctl", "kit", "lint"],
    "project": ["project", "initiative", "rewrite", "launch"],
    "task": ["migration", "cleanup", "review", "errand", "renewal"],
    "concept": ["theory", "effect", "principle", "model"],
    "skill": ["technique", "drill", "practice"],
}

# ----------------------------------------------------------------------------------------------------
# Generator version 2 (signet_rl.datasets.synthetic_v2). Version 1 never reads these.

#: Bridge facts in two wordings that state the same thing (same slot values, few shared words); the
#: first wording also seeds the near-duplicate distractors (same words, other values).
#: Generator v3's principles: a value a person holds, stated in unrelated contexts (work, people, systems,
#: research, home). Each statement is paraphrased (no shared template) but names the value itself in some
#: word form, as a person who cares about privacy says privacy-ish things whatever the context.
PRINCIPLES_V3: dict[str, list[str]] = {
    "privacy": [
        "keeps personal data out of logs to protect privacy",
        "refuses analytics that invade people's privacy",
        "encrypts notes by default, privacy first",
        "never shares anything private without consent",
        "picks apps by how well they guard privacy",
    ],
    "simplicity": [
        "picks the simplest option when in doubt",
        "deletes code to keep things simple",
        "one tool per job: simplicity over frameworks",
        "avoids clever abstractions, simple beats smart",
        "keeps the weekly plan short and simple",
    ],
    "reproducibility": [
        "pins every dependency version so builds are reproducible",
        "records the seed of every run to reproduce it later",
        "rebuilds results from raw data so they can be reproduced",
        "keeps a lab notebook so each change is reproducible",
        "cooks from written recipes to reproduce a good dish",
    ],
    "rest": [
        "protects weekends from work to get real rest",
        "logs off at six to rest in the evening",
        "no screens after ten, rest comes first",
        "takes a full week off each quarter to rest",
        "plans trips with rest days built in",
    ],
    "writing": [
        "writes decisions down before acting",
        "keeps a changelog written in plain prose",
        "answers questions with a short written doc",
        "summarises every meeting in writing",
        "writes letters to friends rather than texting",
    ],
}

BRIDGE_PARAPHRASES: list[tuple[str, str]] = [
    (
        "the quarterly review falls on the first {weekday} of {month}",
        "in {month} the first {weekday} is kept free for going over the quarter",
    ),
    (
        "uses the {color} notebook for anything about {topic}",
        "notes on {topic} all go into a {color} cover",
    ),
    (
        "the {region} trip overlaps with the {pipeline} migration",
        "moving to {pipeline} clashes with travelling to {region}",
    ),
    (
        "budget for {store} licences comes from the shared pot",
        "{store} seats are paid from a common fund",
    ),
    (
        "the {sport} club and the standup share the {num} am slot",
        "{sport} practice collides with the daily sync at {num}",
    ),
]

#: How a query refers to an entity through one of its edges, by dependency type: ``out`` when the
#: entity is the edge's source (``{z}`` is the target), ``in`` when it is the target.
ROLE_PHRASES: dict[str, dict[str, str]] = {
    "uses": {"out": "the {etype} that relies on {z}", "in": "the {etype} that {z} relies on"},
    "requires": {
        "out": "the {etype} that cannot run without {z}",
        "in": "the {etype} {z} cannot run without",
    },
    "blocks": {"out": "the {etype} stuck behind {z}", "in": "the {etype} holding up {z}"},
    "owned_by": {"out": "the {etype} {z} looks after", "in": "whoever looks after {z}"},
    "informs": {"out": "the {etype} that feeds {z}", "in": "the {etype} fed by {z}"},
}

#: Query templates of version 2 in two families: ``seen`` (train and validation queries) and ``unseen``
#: (test queries only). ``{x}``/``{y}`` are references (a name, alias, role, attribute or description);
#: ``{aspect}`` (only in the ``_topic`` lists) names the aspect of one needed fact.
QUERIES_V2: dict[str, dict[str, list[str]]] = {
    "seen": {
        "what": ["what do I know about {x}?", "tell me about {x}", "give me the rundown on {x}"],
        "what_topic": ["what do I know about {x}'s {aspect}?", "tell me about the {aspect} of {x}"],
        "relate": ["how does {x} relate to {y}?", "what connects {x} and {y}?"],
        "action": ["what should I do about {x}?", "how should I handle {x} now?"],
        "action_topic": ["what should I do about the {aspect} of {x}?"],
        "changed": ["what changed about {x}?", "has anything about {x} changed?"],
        "changed_topic": ["what changed about {x}'s {aspect}?"],
        "none": ["lol nice", "good morning", "thanks, that helped a lot", "haha ok", "sounds good"],
    },
    "unseen": {
        "what": ["catch me up on {x}", "refresh my memory: {x}", "where are we with {x}"],
        "what_topic": ["catch me up on {x}, mostly the {aspect}", "{aspect} for {x}, quickly"],
        "relate": ["{x} and {y}: same story?", "why would {x} matter for {y}"],
        "action": ["about to pick up {x} again, heads-up?", "before I touch {x}: pitfalls?"],
        "action_topic": ["before I touch the {aspect} of {x}: pitfalls?"],
        "changed": ["anything new with {x} since last time", "{x} moved on since then?"],
        "changed_topic": ["did {x}'s {aspect} move since last time"],
        "none": ["we shipped it!! 🎉", "brb, coffee", "wow that was fast", "great work everyone"],
    },
}
