"""The generated dataset of study 3's own shapes: PITCHf/x pitches (5,508,014 rows of 61 columns,
1.59 GB of CSV in the study), with an increasing `pitchID`.

Pitch `k` (a key number) is a function of `k` alone, so every run, client and cell writes the same
data set. `pitchID` is the key number itself: a ranged shard key on it with inserts in order
(one importer: `load.threads: 1`, `clients.parallelism: 1`) sends every insert to the shard that
owns the top chunk, as the study's import did. The 61 columns follow PITCHf/x's (the pitch's
game, at-bat, count and players; its speeds, movement, location and spin from the tracker; the
outcome); their values are drawn from plausible ranges, not the real season. Stored as BSON with
the column names in every document, a pitch takes about 970 bytes, 5.3 GB for the whole set
(the CSV's 289 bytes a row hold values only); `_id`, YCSB's key name as in every scenario, is a
62nd field. Generating a pitch takes about 60 us of the importer's CPU (as parsing the CSV took
the study's mongoimport some). Only `_id` and the shard key are
indexed: a find or an aggregation on any other column scans every shard.

The study's two timed shapes subclass PitchesScenario; its `load_operation()` (the base's)
inserts `recordcount` pitches, so either of them can be a BenchmarkRun's `load.scenario`.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from mongobench_scenario import MongoScenario

PITCH_TYPES = ("FF", "FT", "SI", "FC", "SL", "CU", "KC", "CH", "FS", "KN", "EP")
OUTCOMES = ("ball", "called_strike", "swinging_strike", "foul", "in_play")
EVENTS = ("Strikeout", "Walk", "Single", "Double", "Home Run", "Groundout", "Flyout", "Lineout")
TEAMS = ("ana", "bos", "chn", "cle", "det", "hou", "lan", "nya", "oak", "sea", "sfn", "tex")
SEASON_START = datetime(2016, 4, 3, tzinfo=UTC)
COLUMNS = 61  # pitchID and 60 more, as the study's set
# The tracker's measurements: column, lowest and highest value drawn.
TRACKER = (
    ("pfx_x", -15, 15), ("pfx_z", -15, 15), ("px", -2.5, 2.5), ("pz", -1, 5),
    ("x0", -4, 4), ("y0", 50, 50), ("z0", 4, 7), ("vx0", -15, 15), ("vy0", -150, -95),
    ("vz0", -15, 5), ("ax", -25, 25), ("ay", 15, 40), ("az", -45, -5),
    ("break_y", 23.7, 23.9), ("break_angle", -60, 60), ("break_length", 2, 20),
    ("spin_dir", 0, 360), ("spin_rate", 500, 3200), ("x", 50, 200), ("y", 100, 250),
)  # fmt: skip


def pitch(keynum: int, key: str) -> dict[str, Any]:
    """Pitch number `keynum` under the key name `key`."""
    r = random.Random(keynum)
    speed = r.uniform(68.0, 101.0)
    at = SEASON_START + timedelta(days=r.randrange(183), seconds=r.randrange(86400))
    return {
        "_id": key,
        "pitchID": keynum,
        "gameID": f"gid_{at:%Y_%m_%d}_{r.choice(TEAMS)}mlb_{r.choice(TEAMS)}mlb_1",
        "atbatNum": r.randint(1, 90),
        "pitchNum": r.randint(1, 12),
        "inning": r.randint(1, 9),
        "top": r.random() < 0.5,
        "pitcher": r.randint(400000, 700000),
        "batter": r.randint(400000, 700000),
        "stand": r.choice("LR"),
        "p_throws": r.choice("LR"),
        "balls": r.randint(0, 3),
        "strikes": r.randint(0, 2),
        "outs": r.randint(0, 2),
        "des": r.choice(OUTCOMES),
        "type": r.choice("BSX"),
        "pitch_type": r.choice(PITCH_TYPES),
        "type_confidence": round(r.uniform(0.5, 2.0), 3),
        "start_speed": round(speed, 1),
        "end_speed": round(speed * r.uniform(0.88, 0.93), 1),
        "sz_top": round(r.uniform(3.0, 3.9), 3),
        "sz_bot": round(r.uniform(1.4, 1.9), 3),
        **{k: round(r.uniform(lo, hi), 3) for k, lo, hi in TRACKER},
        "zone": r.randint(1, 14),
        "nasty": r.randint(0, 100),
        "on_1b": r.randint(400000, 700000) if r.random() < 0.3 else None,
        "on_2b": r.randint(400000, 700000) if r.random() < 0.2 else None,
        "on_3b": r.randint(400000, 700000) if r.random() < 0.1 else None,
        "event": r.choice(EVENTS),
        "home_team": r.choice(TEAMS),
        "away_team": r.choice(TEAMS),
        "date": at,
        "tfs": f"{at:%H%M%S}",
        "sv_id": f"{at:%y%m%d_%H%M%S}",
        "cc": "",
        "mt": "",
        "code": r.choice("BCSFX"),
        "event_num": r.randint(1, 900),
        "play_guid": f"{r.getrandbits(128):032x}",
        "pitch_count": r.randint(1, 120),
        "umpire": r.randint(400000, 500000),
        "stadium": r.randint(1, 30),
        "temperature": r.randint(45, 100),
    }


class PitchesScenario(MongoScenario):
    """A scenario over the pitches data set (not run by itself)."""

    abstract = True

    def document(self, keynum: int) -> dict[str, Any]:
        return pitch(keynum, self.key(keynum))
