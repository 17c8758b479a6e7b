-- Full-text search on player names: an FTS5 table over `player`, kept in
-- sync by triggers (external content, so names are stored once).
--
--     SELECT player.* FROM player_search
--     JOIN player ON player.id = player_search.rowid
--     WHERE player_search MATCH 'arth*';

CREATE VIRTUAL TABLE player_search USING fts5(name, content = 'player', content_rowid = 'id');

-- Index the players that exist already.
INSERT INTO player_search (player_search) VALUES ('rebuild');

CREATE TRIGGER player_search_after_insert AFTER INSERT ON player BEGIN
    INSERT INTO player_search (rowid, name) VALUES (new.id, new.name);
END;

CREATE TRIGGER player_search_after_delete AFTER DELETE ON player BEGIN
    INSERT INTO player_search (player_search, rowid, name) VALUES ('delete', old.id, old.name);
END;

CREATE TRIGGER player_search_after_update AFTER UPDATE OF name ON player BEGIN
    INSERT INTO player_search (player_search, rowid, name) VALUES ('delete', old.id, old.name);
    INSERT INTO player_search (rowid, name) VALUES (new.id, new.name);
END;
