"""The robot fit's default windows (``frictionsim robot identify``), apart from the fit so
that the command line's help reads them without loading MuJoCo."""

#: The windows the fit sees by default: 10 s long, one in 8 (204 631 control periods of the
#: 35 SO-101 recordings). Four times cheaper cuts (4 s, one in 32) came within 1 % of them in
#: a five-fold cross-validation by motion, and 24–42 % further from motions of the same arm
#: the project never saw (docs/results.md) ...
WINDOW = 10.0
STRIDE = 8
#: ... but one in fewer where that would keep under this many windows (small data sets).
MIN_WINDOWS = 12
#: Where a window's starting velocity comes from: ``recorded``, the servo's own velocity
#: reading of the window's first row, or ``difference``, the recorded positions' central
#: difference over their timestamps (``frictionsim.robot_recordings.differenced_velocity``),
#: what a recording without velocities (a LeRobot dataset) holds; each with the words a
#: report says it in.
START_VELOCITIES = {"recorded": "the velocities read",
                    "difference": "the positions' central difference"}
START_VELOCITY = "recorded"
