# man2help.awk: the help of each command of dataspoc-pipe, from its man page
# (man/dataspoc-pipe.1, mdoc), so that the two never say different things.
# For each item ".It Cm COMMAND ..." of the DESCRIPTION's command list (and
# ".It Fl -version" for version), writes DIR/COMMAND: the item's text as
# plain text, wrapped at 76 columns; nested lists become indented lines.
# Only the mdoc that the page uses is rendered.  Usage: awk -v dir=DIR -f
# man2help.awk man/dataspoc-pipe.1
BEGIN {
	W = 76
	split("Ar Cm Em Ev Fl Ic Li Nm No Ns Pa Pf Sx Sy Va Xr Dq Ql Pq Op Sq", m, " ")
	for (i in m) MACRO[m[i]] = 1
	OPEN["Dq"] = "\""; CLOSE["Dq"] = "\""
	OPEN["Ql"] = "'"; CLOSE["Ql"] = "'"
	OPEN["Sq"] = "'"; CLOSE["Sq"] = "'"
	OPEN["Pq"] = "("; CLOSE["Pq"] = ")"
	OPEN["Op"] = "["; CLOSE["Op"] = "]"
	out = ""; depth = 0; section = ""; para = ""; indent = 0; lit = 0
}

function esc(s) {
	gsub(/\\\(dq/, "\"", s); gsub(/\\e/, "\\", s); gsub(/\\&/, "", s); gsub(/\\-/, "-", s)
	return s
}

# the words of a macro line, "quoted" ones kept whole
function tokenize(line,   n, c) {
	n = 0
	while (line != "") {
		sub(/^[ \t]+/, "", line)
		if (line == "") break
		n++
		if (substr(line, 1, 1) == "\"") {
			c = index(substr(line, 2), "\"")
			if (c == 0) c = length(line)
			tok[n] = esc(substr(line, 2, c - 1)); q[n] = 1
			line = substr(line, c + 2)
		} else {
			c = match(line, /[ \t]/)
			if (c == 0) c = length(line) + 1
			tok[n] = esc(substr(line, 1, c - 1)); q[n] = 0
			line = substr(line, c)
		}
	}
	return n
}

function isclose(i) { return !q[i] && tok[i] ~ /^[.,;:)\]?!]$/ }
function ismacro(i) { return !q[i] && (tok[i] in MACRO) }

# add word w to s: after a space unless nospace
function add(s, w, nospace) {
	if (s == "" || nospace) return s w
	return s " " w
}

# tokens a..b as text
function render(a, b,   i, t, s, ns, e, dash, w) {
	s = ""; ns = 0; dash = 0
	for (i = a; i <= b; i++) {
		t = tok[i]
		if (ismacro(i)) {
			dash = 0
			if (t in OPEN) {
				e = b
				while (e > i + 1 && isclose(e)) e--
				s = add(s, OPEN[t] render(i + 1, e) CLOSE[t], ns); ns = 0
				i = e
			} else if (t == "Ns") {
				ns = 1
			} else if (t == "Pf") {
				if (i < b) { i++; s = add(s, tok[i], ns); ns = 1 }
			} else if (t == "Fl") {
				dash = 1
				if (i == b || ismacro(i + 1) || isclose(i + 1)) { s = add(s, "-", ns); ns = 0 }
			} else if (t == "Nm") {
				if (i == b || ismacro(i + 1) || isclose(i + 1)) { s = add(s, "dataspoc-pipe", ns); ns = 0 }
			} else if (t == "Xr") {
				if (i + 1 <= b) { s = add(s, tok[i + 1] "(" tok[i + 2] ")", ns); ns = 0; i += 2 }
			}
			continue
		}
		if (isclose(i)) { s = s t; continue }
		w = dash ? "-" t : t
		if (!q[i] && (t == "(" || t == "[")) { s = add(s, t, ns); ns = 1; continue }
		s = add(s, w, ns); ns = 0
	}
	return s
}

# the paragraph so far, wrapped; an item's lines after its first indented 2 more
function flush(   words, n, i, line, pre) {
	if (para == "") return
	n = split(para, words, " ")
	pre = sprintf("%" indent "s", "")
	line = pre
	for (i = 1; i <= n; i++) {
		if (line != pre && length(line) + 1 + length(words[i]) > W) {
			emit(line)
			pre = sprintf("%" (indent + hang) "s", "")
			line = pre
		}
		line = (line == pre) ? line words[i] : line " " words[i]
	}
	emit(line)
	para = ""; hang = 0
}

function emit(l) { if (cmd != "") text[cmd] = text[cmd] l "\n" }

function text_line(s) {
	para = para == "" || glue ? para s : para " " s
	glue = 0
}

/^\.Sh / { flush(); section = $2; cmd = ""; next }
section != "DESCRIPTION" { next }
lit && /^\.Ed/ { lit = 0; next }
lit { emit("    " esc($0)); next }
/^\.Bd/ { flush(); lit = 1; next }
/^\.Bl/ { flush(); depth++; if (depth > 1) indent += 2; next }
/^\.El/ { flush(); if (depth > 1) indent -= 2; depth--; if (depth == 0) cmd = ""; next }
/^\.It/ {
	flush()
	n = tokenize(substr($0, 4))
	if (depth == 1) {
		cmd = ""
		if (tok[1] == "Cm") cmd = tok[2]
		else if (tok[1] == "Fl" && tok[2] == "-version") cmd = "version"
		if (cmd != "" && text[cmd] != "") emit("")
		next
	}
	text_line(render(1, n) ":")
	hang = 2
	next
}
/^\.Po/ { text_line("("); glue = 1; next }
/^\.Pc/ { glue = 1; text_line(")" render(1, tokenize(substr($0, 4)))); next }
/^\.Pp/ { flush(); if (depth >= 1) emit(""); next }
/^\.Dl/ { flush(); n = tokenize(substr($0, 4)); emit(sprintf("%" (indent + 4) "s", "") render(1, n)); next }
/^\.\\"/ { next }
/^\./ { n = tokenize(substr($0, 2)); text_line(render(1, n)); next }
{ n = tokenize($0); for (i = 1; i <= n; i++) q[i] = 1; text_line(render(1, n)) }
END {
	flush()
	for (c in text) {
		f = dir "/" c
		printf "%s", text[c] > f
		close(f)
	}
}
