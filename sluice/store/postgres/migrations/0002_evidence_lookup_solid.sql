-- A proof of death also records the solid height of the node that answered
-- the lookup (sluice.Evidence.LookupSolid): an "unknown" from a node behind
-- the one whose solid block the proof cites proves nothing. NULL on events
-- written before this column existed (read back as 0: not recorded).
ALTER TABLE events ADD COLUMN ev_lookup_solid bigint;
