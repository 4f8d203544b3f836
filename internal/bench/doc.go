// Package bench is stepwise's standard end-to-end workload: an agent with one
// internal echo tool and a scripted model that calls it once per turn for N
// turns and then answers, run through the real runner and the real SQLite
// store. It measures per-turn latency, bytes written per step, peak memory,
// loading and replaying, the same run without checkpointing, and the floor
// on the same machine (a bare SQLite insert of the same bytes per step, and
// the CBOR encoding of a step's delta). `stepwise bench` prints it.
package bench
