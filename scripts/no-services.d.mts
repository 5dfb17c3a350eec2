// Loaded for its effect: unit test processes refuse to reach Postgres or Redis.
export {}
