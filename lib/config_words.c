/* config_words: source.tap written as a string, split into its words. */
#include "config_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "sb.h"
#include "util.h"

/*
 * Split s into words as sh(1) would split a simple command, refusing
 * anything sh would expand or interpret: no shell runs the tap, and passing
 * "$HOME" on literally would be a silent surprise.  On error returns -1 with
 * the reason appended to why.
 */
int config_split_words(const char *s, char ***argvp, struct sb *why)
{
	struct sb w = SB_INIT;
	char **argv = NULL;
	size_t n = 0, i = 0;
	int inword = 0;

	for (;;) {
		char ch = s[i];

		if (ch == '\\' && s[i + 1] == '\n') {
			i += 2;
			continue;
		}
		if (ch == '\0' || ch == ' ' || ch == '\t') {
			if (inword) {
				push(&argv, &n, sb_detach(&w));
				inword = 0;
			}
			if (ch == '\0')
				break;
			i++;
			continue;
		}
		if (!inword && (ch == '#' || ch == '~')) {
			sb_addf(why, "a word starting with '%c' is special to a shell, "
				 "and the tap runs without one: quote it, or write source.tap as a list", ch);
			goto fail;
		}
		inword = 1;
		if (ch == '\'') {
			const char *end = strchr(s + i + 1, '\'');

			if (end == NULL) {
				sb_addf(why, "unterminated single quote");
				goto fail;
			}
			sb_add(&w, s + i + 1, (size_t)(end - (s + i + 1)));
			i = (size_t)(end - s) + 1;
		} else if (ch == '"') {
			for (i++; s[i] != '"'; i++) {
				if (s[i] == '\0') {
					sb_addf(why, "unterminated double quote");
					goto fail;
				}
				if (s[i] == '\\' && s[i + 1] && strchr("$`\"\\\n", s[i + 1])) {
					if (s[++i] != '\n')
						sb_addc(&w, s[i]);
				} else if (s[i] == '$' || s[i] == '`') {
					sb_addf(why, "'%c' inside double quotes is expanded by a shell, "
						 "and the tap runs without one: use single quotes, or write "
						 "source.tap as a list", s[i]);
					goto fail;
				} else {
					sb_addc(&w, s[i]);
				}
			}
			i++;
		} else if (ch == '\\') {
			if (s[i + 1] == '\0') {
				sb_addf(why, "a backslash at the end");
				goto fail;
			}
			sb_addc(&w, s[i + 1]);
			i += 2;
		} else if (ch == '\n') {
			sb_addf(why, "a newline separates commands in a shell, "
				 "and the tap runs without one: write source.tap on one line or as a list");
			goto fail;
		} else if (strchr("$`|&;<>()*?[", ch)) {
			sb_addf(why, "'%c' is special to a shell, and the tap runs without one: "
				 "quote it, or write source.tap as a list", ch);
			goto fail;
		} else {
			sb_addc(&w, ch);
			i++;
		}
	}
	if (n > 0) {
		const char *p = argv[0];

		if (isalpha((unsigned char)*p) || *p == '_') {
			while (isalnum((unsigned char)*p) || *p == '_')
				p++;
			if (*p == '=') {
				sb_addf(why, "'%.64s' would set a variable in a shell, "
					 "and the tap runs without one: set it in the environment", argv[0]);
				goto fail;
			}
		}
	}
	*argvp = argv;
	return 0;
fail:
	sb_free(&w);
	util_strv_free(argv);
	return -1;
}
