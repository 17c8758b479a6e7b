-- Every score change is kept: a trigger writes the history, so a plain
-- `UPDATE player SET score = …` also changes `score_change`.

CREATE TABLE score_change (
    id INTEGER PRIMARY KEY,
    player_id INTEGER NOT NULL REFERENCES player(id) ON DELETE CASCADE,
    old_score INTEGER NOT NULL,
    new_score INTEGER NOT NULL,
    changed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE INDEX score_change_on_player_id ON score_change(player_id);

CREATE TRIGGER player_score_changed
AFTER UPDATE OF score ON player
WHEN new.score IS NOT old.score
BEGIN
    INSERT INTO score_change (player_id, old_score, new_score)
    VALUES (new.id, old.score, new.score);
END;

-- Team totals for the leaderboard; teams without players count zero.
CREATE VIEW team_score AS
SELECT
    team.id AS team_id,
    team.name AS team_name,
    count(player.id) AS player_count,
    coalesce(sum(player.score), 0) AS total_score
FROM team
LEFT JOIN player ON player.team_id = team.id
GROUP BY team.id;
