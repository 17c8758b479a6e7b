-- A few players, so that a new database shows a leaderboard.

INSERT INTO player (name, score) VALUES
    ('Arthur', 100),
    ('Barbara', 80),
    ('Craig', 60),
    ('Diane', 40);
