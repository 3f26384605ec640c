// Package rig is what the end-to-end tests under test/ share: a real test
// server, optionally behind a fault proxy, with a ResilientClient connected
// to it (Rig); the servers nobody here wrote behind one interface
// (RealServer, Target); recorders of what the client logs (LogRecorder),
// sends (WireRecorder) and tells its observers (Recorder); a server guarded
// by a loopback authorization server (GuardedServer, Browser); and the
// helpers that call, wait and check the error contract. It is test code:
// its functions take the test's *testing.T or *testing.B and fail it
// themselves.
package rig
