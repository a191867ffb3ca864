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

# ----------------------------------------------------------------------------------------------------
# Generator version 4 (signet_rl.datasets.synthetic_v4). Written before any detector was run on v4.

#: Generator v4's principles: a value a person holds, stated in unrelated contexts (work, home, money,
#: friends, travel). Each value has a bank of paraphrases of which a seed draws some; no two paraphrases of
#: one value share a content word, not even a word stem (the first four letters of a non-stop word), so a
#: detector cannot find the value by a word its statements share: only their meaning is common.
PRINCIPLES_V4: dict[str, list[str]] = {
    "privacy": [
        "keeps personal data out of logs",
        "turns off location tracking on every app",
        "asks before posting pictures that show other people",
        "uses end-to-end encrypted chat for family matters",
        "covers the laptop camera when it is idle",
        "never gives a home address to shops",
        "pays cash so purchases stay anonymous",
        "declines loyalty cards that record what was bought",
    ],
    "reversibility": [
        "prefers decisions that can be undone",
        "rolls out changes behind a feature flag",
        "rents gear before buying it",
        "keeps the old setup around until its replacement proves itself",
        "signs month-to-month leases rather than long contracts",
        "tries a trial period first",
        "makes small bets that are cheap to back away from",
        "avoids one-way doors",
    ],
    "local-first": [
        "favours tools that work offline",
        "stores files on a disk at home rather than in the cloud",
        "runs a self-hosted server for email",
        "picks software that saves everything on the device itself",
        "backs up photos to a drive kept in the drawer",
        "dislikes apps that break when the internet drops",
        "syncs notes peer-to-peer without a vendor account",
        "owns copies of music instead of streaming",
    ],
    "rest": [
        "protects weekends from work",
        "logs off at six every evening",
        "no screens after ten",
        "takes a fortnight away each quarter",
        "naps after lunch on busy days",
        "books holidays with nothing planned",
        "turns down late friday meetings",
        "sleeps eight hours before anything important",
    ],
    "frugality": [
        "repairs broken things instead of replacing them",
        "buys secondhand furniture",
        "cooks at home rather than ordering in",
        "cancels subscriptions nobody uses",
        "compares prices before any purchase",
        "keeps a strict monthly budget",
        "picks the cheapest plan that does the job",
        "reuses old laptops as test machines",
    ],
}

#: Topic decoys: statements that share a topic word but express different or opposite values (no value
#: common to them). A seed writes some of each topic's statements at entities of different communities,
#: with or without planted principles (the control keeps them).
TOPIC_DECOYS_V4: dict[str, list[str]] = {
    "phone": [
        "keeps the phone on loud all night for work calls",
        "shares the phone's location with the whole team",
        "upgrades the phone every year",
        "uses the phone as the only computer",
        "leaves the phone behind on hikes",
        "reads the news on the phone at breakfast",
    ],
    "cloud": [
        "moves everything to the cloud as soon as possible",
        "pays for the biggest cloud plan available",
        "trusts the cloud provider with all backups",
        "runs nightly cloud builds for every branch",
        "blogs about cloud pricing",
        "learned the cloud console before the command line",
    ],
    "weekend": [
        "works through the weekend before launches",
        "spends weekends on side projects",
        "plans weekend trips months ahead",
        "answers email at the weekend",
        "hosts weekend dinners for the neighbours",
        "runs a long race most weekends",
    ],
    "photos": [
        "posts every holiday photo publicly",
        "deletes old photos to free space",
        "prints photos for the fridge",
        "tags friends in photos by default",
        "edits photos late into the night",
        "sells photos to stock sites",
    ],
    "budget": [
        "ignores the budget when a tool looks fun",
        "sets the team budget in january",
        "shares a budget spreadsheet with everyone",
        "overspends the travel budget happily",
        "asks for a bigger budget every review",
        "leaves the budget to the accountant",
    ],
    "meetings": [
        "schedules meetings at seven in the morning",
        "records every meeting and posts the video",
        "cancels meetings at short notice",
        "runs meetings standing up",
        "invites the whole floor to meetings",
        "brings cake to monday meetings",
    ],
}

#: Near-miss decoys: worded like one value's paraphrases (keyed by that value) but stating another value,
#: a different one in each statement. Written with or without planted principles (the control keeps them).
NEAR_MISS_V4: dict[str, list[str]] = {
    "privacy": [
        "keeps detailed logs of personal workouts",
        "turns on location sharing with friends on every trip",
        "posts pictures that show other people at parties",
        "uses a public group chat for family matters",
        "leaves the laptop camera on for every call to look engaged",
        "pays by card for the travel points",
    ],
    "reversibility": [
        "prefers decisions made quickly over decisions made well",
        "rolls out changes to everyone at once to learn fast",
        "buys the best gear outright on day one",
        "removes the old setup the moment the new one runs",
        "signs long contracts for the discount",
        "makes big bets on new frameworks for the fun of it",
    ],
    "local-first": [
        "favours tools that look beautiful",
        "stores files wherever the team can find them fastest",
        "runs a hosted service for email to save time",
        "picks software the whole family already knows",
        "backs the local football club",
        "streams music while working for focus",
    ],
    "rest": [
        "protects mornings for deep work",
        "logs on at six every morning to beat traffic",
        "screens calls from unknown numbers",
        "takes a full course load each quarter",
        "books holidays packed with museums",
        "turns up early to friday meetings",
    ],
    "frugality": [
        "repairs bikes for the neighbours for free",
        "buys designer furniture as an investment",
        "cooks elaborate dinners for friends",
        "cancels plans to help anyone who asks",
        "compares notes with colleagues before any review",
        "keeps a strict morning routine",
    ],
}
