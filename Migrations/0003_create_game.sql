-- Games between two teams, and what each player scored in them.

CREATE TABLE game (
    id INTEGER PRIMARY KEY,
    home_team_id INTEGER NOT NULL REFERENCES team(id) ON DELETE CASCADE,
    away_team_id INTEGER NOT NULL REFERENCES team(id) ON DELETE CASCADE,
    played_at TEXT NOT NULL,
    CHECK (home_team_id <> away_team_id)
);

CREATE INDEX game_on_played_at ON game(played_at);

-- Who played which game and their points: keyed by (game, player), with no
-- rowid of its own.
CREATE TABLE game_player (
    game_id INTEGER NOT NULL REFERENCES game(id) ON DELETE CASCADE,
    player_id INTEGER NOT NULL REFERENCES player(id) ON DELETE CASCADE,
    points INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (game_id, player_id)
) WITHOUT ROWID;

CREATE INDEX game_player_on_player_id ON game_player(player_id);
