package daemon

// orderedEvents: inotify puts the events of all the watches of one
// instance in one queue, in the order they happened.
const orderedEvents = true
