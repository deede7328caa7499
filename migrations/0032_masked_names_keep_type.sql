-- A removed secret entity's names keep its type: a person's first and last names were hidden alone while it existed
-- (memory.graph.rules.alone_words reads the type), and once the DM removed it its names, kept with no entity, were
-- hidden whole only, so "Holt" of Vaskerrin Holt showed again. Removing reveals nothing: its names stay hidden as
-- they were. NULL: a name the entity still bearing it types, or one kept with no type (a campaign file's
-- hidden_names, a removal before this), hidden whole.
ALTER TABLE masked_names ADD COLUMN type text;
