-- The deployment's partition count: apps are hashed over it into work streams, so every process of a
-- deployment must use the same one. The first process to start records its PM_PARTITIONS; a later one started with
-- another count refuses to start; `pombo partitions resize N` is the only way to change it.
CREATE TABLE deployment_partitions (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  partitions int NOT NULL CHECK (partitions > 0),
  changed_at timestamptz NOT NULL DEFAULT now()
);
