-- An accepted event is told, not named ("you stop by the Foramere Basin"): the lines it was drawn from are its
-- mentions (memory.mentions.index_told), so its card and `entity mentions` say when it happened.
INSERT INTO entity_mentions (campaign_id, entity_id, entry_id, session_id)
SELECT e.campaign_id, e.id, se.id, se.session_id
FROM entities e
CROSS JOIN LATERAL jsonb_array_elements_text(
    CASE jsonb_typeof(e.provenance -> 'entry_ids') WHEN 'array' THEN e.provenance -> 'entry_ids' END
) AS told(entry_id)
JOIN session_entries se ON se.campaign_id = e.campaign_id AND se.id = told.entry_id::bigint
WHERE e.type = 'event' AND e.status = 'accepted'
ON CONFLICT DO NOTHING;
