-- Teams and their players.
--
-- A player belongs to at most one team. Deleting a team deletes its players
-- (a foreign-key cascade, so observations of `player` must notice deletes
-- that no statement names).

CREATE TABLE team (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    color TEXT NOT NULL DEFAULT 'gray'
);

CREATE TABLE player (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    score INTEGER NOT NULL DEFAULT 0,
    team_id INTEGER REFERENCES team(id) ON DELETE CASCADE
);

CREATE INDEX player_on_team_id ON player(team_id);
CREATE INDEX player_on_score ON player(score DESC);
