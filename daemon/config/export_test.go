package config

// KnownKeys are the keys a file may set, for the tests of package config_test.
var KnownKeys = knownKeys
