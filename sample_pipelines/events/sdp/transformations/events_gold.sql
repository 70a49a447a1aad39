-- opens and closes per action per 1-hour window over every silver row (a materialized view:
-- recomputed from silver on each run, the counterpart of the bundled pipeline's complete-mode gold)
CREATE MATERIALIZED VIEW events_gold AS
SELECT action, window.start AS window_start, window.end AS window_end, count(*) AS count
FROM events_silver
GROUP BY action, window(time, '1 hour')
