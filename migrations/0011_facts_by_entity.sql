-- Every fact of an entity, current or closed, by either end. Players still see a closed fact when what closed it
-- is hidden from them, until a later fact they see (memory/graph.py, _PLAYERS_FACTS): a walk of the graph looks for
-- those entity by entity, and the indexes of current facts alone left each step of a player's walk reading every
-- fact of the campaign.
CREATE INDEX relationships_by_source ON relationships (campaign_id, source_id);
CREATE INDEX relationships_by_target ON relationships (campaign_id, target_id);
