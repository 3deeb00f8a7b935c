package conformance

// Notes explain known differences in the report, keyed "API: scenario".
var Notes = map[string]string{}
