-- The review state (sluice.Review): a solid SUCCESS whose Transfer logs do
-- not show exactly the payment asked. PostgreSQL cannot use a new enum value
-- in the transaction that adds it, so the rules that name it are 0004.
ALTER TYPE op_state ADD VALUE 'review' AFTER 'rejected';
