-- A proof of death by a failed receipt also records whether the node that
-- showed the receipt called its block solid (sluice.Evidence.SeenSolid):
-- behind a balancer, a node left on an orphaned fork shows the orphaned
-- block's receipt at a height another node's solid block covers, and only
-- the node that showed it can say the block is final. NULL on events
-- written before this column existed (read back as false: not recorded).
ALTER TABLE events ADD COLUMN ev_seen_solid boolean;
