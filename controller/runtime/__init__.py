"""API plumbing with no job semantics: the client and its connection, informers, the work queue, expectations, leader election, Events, metrics, health, and the one write path for children."""
