-- +goose Up
-- The fleet's id (internal/capacity/pgcapacity FleetID): one row, written by the first control
-- plane that needs it, from its own random source, and read by every replica after it. Every
-- lease's engine tag carries it, so two fleets whose clusters share an engine server (and whose
-- lease ids, "<cluster>#<generation>", repeat) never fence each other's queries.
CREATE TABLE capacity_fleet (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    id  text NOT NULL CHECK (id <> '')
);

-- +goose Down
DROP TABLE capacity_fleet;
