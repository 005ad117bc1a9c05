"""The README keeps exactly two set-up commands, and CI runs the test one verbatim."""

import re

from helpers import ROOT


def test_two_setup_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```(?:bash|sh)?\n(.*?)```", setup, re.S)
    assert len(commands) == 2, commands
    main, test = (c.strip() for c in commands)
    assert "python -m jaxcap.launch --config configs/modmod.py" in main
    assert "pytest" in test
    assert test in (ROOT / ".ci" / "run").read_text()


def test_readme_is_the_short_front_door_and_its_docs_links_resolve():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    links = re.findall(r"\]\(((?:docs/)[^)#]+)", readme)
    assert len(links) >= 8, links
    for link in links:
        assert (ROOT / link).is_file(), link
    for page in (ROOT / "docs").rglob("*.md"):  # docs pages link to pages that exist too
        for link in re.findall(r"\]\(([^)#:]+\.md)", page.read_text()):
            assert (page.parent / link).is_file(), (page, link)


def test_code_comments_cite_docs_pages_that_exist():
    cited = set()
    for path in [*(ROOT / "jaxcap").rglob("*.py"), *(ROOT / "configs").glob("*.py")]:
        text = path.read_text()
        assert "README" not in text, f"{path}: cite a docs/ page, not the README"
        cited |= set(re.findall(r"docs/[\w/.-]+\.md", text))
    for page in cited:
        assert (ROOT / page).is_file(), page
