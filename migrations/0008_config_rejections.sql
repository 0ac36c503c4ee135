-- +goose Up
-- Configuration edits the control plane refused (an invalid document, an engine check that
-- failed, a wipe without force), kept so an operator can see what was tried and why it was
-- refused (GET /admin/config/rejections, `queryflux config rejections`, Studio's config page).
-- reason is the refusal as the API answered it: field paths and messages, never the document,
-- so no secret is stored here. The control plane keeps the newest rows only.
CREATE TABLE config_rejections (
    id         bigserial PRIMARY KEY,
    source     text NOT NULL,
    reason     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE IF EXISTS config_rejections;
