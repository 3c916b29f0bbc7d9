// Package explain shows why two files were called similar: which parts of
// them are shared, measured exactly on their bytes rather than estimated
// from fingerprints.
//
// Vocabulary:
//
//   - A unit is what ranges are counted in: lines when both files are text
//     (the rule of package fingerprint: no NUL byte and few control bytes
//     in the first 8 KiB), bytes otherwise.
//   - A line is a run of bytes ending in "\n", or the last bytes of a file
//     that does not end in one. Two lines are equal when their bytes are,
//     once a final "\r\n" or "\n" is set aside: a file with CRLF line ends
//     and its copy with LF ones share every line.
//   - A run is a stretch of A equal to a stretch of B, reported as line
//     ranges (first and last line, counted from 1) and byte ranges (offset
//     and length) in both files. Runs are maximal: a run of whole lines is
//     reported from its first line to its last. Runs are listed in A's
//     order and never overlap in A; a part of B may be the match of two
//     parts of A (a block A holds twice and B once).
//   - An anchor is where a run is first found: a line of A that occurs in
//     B (lines), or a B block of BlockSize bytes at a multiple of BlockSize
//     whose hash A's rolling hash meets (bytes, Bentley and McIlroy 1999).
//     From an anchor the run is extended forwards and backwards while the
//     two files agree, comparing bytes, so a hash collision never makes a
//     run. Of the places in B an A position matches, at most MaxCandidates
//     are tried, those nearest the diagonal of the last run first, so
//     repetitive files cost linear time.
//   - The share of a file is the part of its bytes covered by runs: every
//     byte of B covered by a run counts once.
//   - A boilerplate run is a run whose bytes hold fingerprints of A and
//     only fingerprints too common to count: those the index holds in more
//     than max_df files, which a query of A skips (package index). It is
//     shown, but its bytes did not count in the containment the daemon
//     reports. A run holding no fingerprint of A is not boilerplate.
//
// JSON. An Explanation encodes (MarshalJSON) as the object sifctl prints
// with --explain --json, for compare and for each match of similar:
//
//	{"a": {"path": "draft.c", "size": 1400, "type": "text", "lines": 34},
//	 "b": {"path": "/srv/src/foo.c", "size": 1151, "type": "text", "lines": 29},
//	 "unit": "lines",
//	 "runs": [{"a_lines": [1, 12], "b_lines": [1, 12], "a_bytes": [0, 615], "b_bytes": [0, 615], "boilerplate": true},
//	          {"a_lines": [25, 34], "b_lines": [20, 29], "a_bytes": [1065, 335], "b_bytes": [816, 335], "boilerplate": false}],
//	 "a_share": 67.86, "b_share": 82.54, "a_boilerplate_share": 43.93, "b_boilerplate_share": 53.43,
//	 "boilerplate_judged": true}
//
// Its fields:
//   - "a", "b": the two sides: path (and "path_raw" when it is not valid
//     UTF-8), size in bytes, type, lines for text; sifctl adds
//     "changed_since_indexed" to a match of similar.
//   - "unit": "lines" when both are text, else "bytes".
//   - "runs", in A's order: "a_lines" and "b_lines", first and last line
//     counted from 1 (unit lines only); "a_bytes" and "b_bytes", offset
//     and length (whole lines with their line ends in unit lines);
//     "boilerplate".
//   - "a_share", "b_share": percent of each file covered by runs (each
//     byte of B once); "a_boilerplate_share", "b_boilerplate_share": the
//     part of that covered only by boilerplate runs.
//   - "boilerplate_judged": false when no index could be asked, with the
//     reason in "note".
//
// Cost. With n and m the sizes of A and B, splitting and hashing take
// O(n + m) time and memory. Every A position tries at most MaxCandidates
// anchors (in unit bytes, a hit also tries the next BlockSize−1
// positions), a candidate that cannot beat the best run so far is not
// extended, and A resumes after the run found, so the work is
// O(MaxCandidates·(n + m)) byte comparisons in the worst case (times
// BlockSize for bytes) and close to n + m on ordinary files. Files larger
// than MaxSize are refused (ErrTooLarge) rather than explained.
package explain
