-- The players and their scores.

CREATE TABLE player (
    name TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 40),
    score INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX player_on_score ON player(score DESC, name);
