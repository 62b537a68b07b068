package org.devicebridge.readme;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * README.md is a front door and docs/ holds the rest: the README stays within 12 KiB, every relative link in
 * README.md and docs/*.md reaches an existing file (and, for a Markdown file, an existing heading), every page
 * in docs/ is reachable from the README and opens with a title and an introduction, and no page speaks of the
 * project's work log (an issue or a session by number).
 */
class ReadmeShapeTest {
    static final int README_MAX_BYTES = 12 * 1024;

    private static final Pattern FENCED = Pattern.compile("(?m)^\\s*```.*?^\\s*```[ \\t]*$", Pattern.DOTALL);
    private static final Pattern INLINE_CODE = Pattern.compile("`[^`\\n]*`");
    private static final Pattern LINK = Pattern.compile("\\[[^\\]]*\\]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)");
    private static final Pattern HEADING = Pattern.compile("(?m)^#{1,6}\\s+(.+?)\\s*#*\\s*$");
    private static final Pattern WORK_LOG = Pattern.compile("(?i)\\b(issue|session)s?\\s*#?\\d+");

    private static Path root() {
        return ReadmeQuickStartTest.repositoryRoot();
    }

    /** README.md, then every docs/*.md, in name order. */
    static List<Path> pages() throws IOException {
        List<Path> pages = new ArrayList<>();
        pages.add(root().resolve("README.md"));
        try (Stream<Path> docs = Files.list(root().resolve("docs"))) {
            docs.filter(p -> p.getFileName().toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        return pages;
    }

    /** The text outside fenced blocks and inline code: what Markdown renders as prose, links and headings. */
    static String prose(String markdown) {
        return INLINE_CODE.matcher(FENCED.matcher(markdown).replaceAll("")).replaceAll("");
    }

    /** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
    static String anchor(String heading) {
        String text = heading.replaceAll("\\[([^\\]]*)\\]\\([^)]*\\)", "$1").replace("`", "");
        StringBuilder slug = new StringBuilder();
        text.toLowerCase(Locale.ROOT).codePoints().forEach(c -> {
            if (Character.isLetterOrDigit(c) || c == '-' || c == '_') {
                slug.appendCodePoint(c);
            } else if (c == ' ') {
                slug.append('-');
            }
        });
        return slug.toString();
    }

    static Set<String> anchors(String markdown) {
        Set<String> anchors = new HashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        Matcher m = HEADING.matcher(FENCED.matcher(markdown).replaceAll(""));
        while (m.find()) {
            String a = anchor(m.group(1));
            int n = seen.merge(a, 1, Integer::sum) - 1;
            anchors.add(n == 0 ? a : a + "-" + n);
        }
        return anchors;
    }

    private static String read(Path p) throws IOException {
        return Files.readString(p, StandardCharsets.UTF_8);
    }

    @Test
    void theReadmeIsAtMost12KiB() throws IOException {
        long size = Files.size(root().resolve("README.md"));
        assertTrue(size <= README_MAX_BYTES,
                "README.md is " + size + " bytes, more than " + README_MAX_BYTES + ": move detail into docs/");
    }

    @Test
    void everyRelativeLinkReachesAFileAndHeading() throws IOException {
        List<String> broken = new ArrayList<>();
        for (Path page : pages()) {
            Matcher m = LINK.matcher(prose(read(page)));
            while (m.find()) {
                String target = m.group(1);
                if (target.matches("(?i)[a-z][a-z0-9+.-]*:.*")) {
                    continue;                                        // https:, mailto: ...
                }
                int hash = target.indexOf('#');
                String file = hash < 0 ? target : target.substring(0, hash);
                String fragment = hash < 0 ? null : target.substring(hash + 1);
                Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
                String where = root().relativize(page) + ": (" + target + ")";
                if (!Files.exists(resolved)) {
                    broken.add(where + " names a missing file");
                } else if (fragment != null && resolved.toString().endsWith(".md")
                        && !anchors(read(resolved)).contains(fragment)) {
                    broken.add(where + " names no heading of " + root().relativize(resolved));
                }
            }
        }
        assertEquals(List.of(), broken);
    }

    @Test
    void everyDocsPageIsLinkedFromTheReadmeAndOpensWithATitleAndAnIntroduction() throws IOException {
        String readme = prose(read(root().resolve("README.md")));
        List<String> wrong = new ArrayList<>();
        for (Path page : pages().subList(1, pages().size())) {
            String name = page.getFileName().toString();
            if (!readme.contains("(docs/" + name + ")") && !readme.contains("(docs/" + name + "#")) {
                wrong.add("docs/" + name + " is not linked from README.md: add it to its Documentation section");
            }
            List<String> lines = read(page).lines().filter(l -> !l.isBlank()).limit(2).toList();
            if (lines.size() < 2 || !lines.get(0).startsWith("# ") || lines.get(1).startsWith("#")) {
                wrong.add("docs/" + name + " does not open with a '# ' title and then a paragraph");
            }
        }
        assertEquals(List.of(), wrong);
    }

    @Test
    void noPageSpeaksOfTheWorkLog() throws IOException {
        List<String> found = new ArrayList<>();
        for (Path page : pages()) {
            Matcher m = WORK_LOG.matcher(read(page));
            while (m.find()) {
                found.add(root().relativize(page) + ": \"" + m.group() + "\"");
            }
        }
        assertEquals(List.of(), found, "issue and session numbers belong to the work log, not the documentation");
    }
}
