// bin/dify-agent/command_tree: pflag's syntax and error texts, cobra's argument rules and help
// layout, and the whole tree's help JSON equal to packaging/dify-agent/agent_cli_help.json.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "bin/dify-agent/cli.hpp"
#include "bin/dify-agent/command_tree.hpp"

using namespace shellctl::dify_agent;

namespace {

struct seen {
  std::vector<std::string> args;
  std::string to;
  bool json = false;
  long long limit = 0;
  std::vector<std::string> list;
  bool ran = false;
};

std::unique_ptr<command> tree(seen& s) {
  auto root = std::make_unique<command>("tool", "A tool.");
  auto& grp = root->add(std::make_unique<command>("grp", "A group."));
  grp.add(std::make_unique<command>("run NAME", "Run one."))
      .args(arg_rule::exactly, 1)
      .flag({"to", 't', flag_kind::string, "Where to.", "", false})
      .flag({"json", 0, flag_kind::boolean, "As JSON.", "", false})
      .flag({"limit", 0, flag_kind::integer, "How many.", "10", false})
      .flag({"tag", 0, flag_kind::string_array, "Tags.", "", false})
      .flag({"secret", 0, flag_kind::string, "Hidden.", "", true})
      .run([&s](const invocation& in) {
        s.ran = true;
        s.args = in.args;
        s.to = in.flags.text("to");
        s.json = in.flags.boolean("json");
        s.limit = in.flags.integer("limit");
        s.list = in.flags.list("tag");
      });
  grp.add(std::make_unique<command>("hidden-one", "Not listed.")).hidden();
  return root;
}

std::string error_of(const std::vector<std::string>& args) {
  seen s;
  try {
    tree(s)->execute(args);
  } catch (const cli_error& e) {
    return e.message;
  }
  return "";
}

}  // namespace

TEST_CASE("flags in pflag's syntax, interspersed with arguments") {
  seen s;
  tree(s)->execute({"grp", "run", "--json", "-t", "x", "N", "--limit=0x10", "--tag", "a", "--tag=b"});
  CHECK(s.ran);
  CHECK(s.args == std::vector<std::string>{"N"});
  CHECK(s.to == "x");
  CHECK(s.json);
  CHECK(s.limit == 16);
  CHECK(s.list == std::vector<std::string>{"a", "b"});
  seen t;
  tree(t)->execute({"grp", "run", "-tdir", "--", "--json"});
  CHECK(t.to == "dir");
  CHECK(t.args == std::vector<std::string>{"--json"});
  CHECK_FALSE(t.json);
  CHECK(t.limit == 10);  // the default
}

TEST_CASE("errors carry pflag's and cobra's texts") {
  CHECK(error_of({"grp", "run"}) == "accepts 1 arg(s), received 0");
  CHECK(error_of({"grp", "run", "a", "b"}) == "accepts 1 arg(s), received 2");
  CHECK(error_of({"grp", "run", "a", "--x"}) == "unknown flag: --x");
  CHECK(error_of({"grp", "run", "a", "-x"}) == "unknown shorthand flag: 'x' in -x");
  CHECK(error_of({"grp", "run", "a", "--to"}) == "flag needs an argument: --to");
  CHECK(error_of({"grp", "run", "a", "-t"}) == "flag needs an argument: 't' in -t");
  CHECK(error_of({"grp", "run", "a", "--limit", "many"}) ==
        "invalid argument \"many\" for \"--limit\" flag: strconv.ParseInt: parsing \"many\": invalid syntax");
  CHECK(error_of({"grp", "run", "a", "--json=maybe"}) ==
        "invalid argument \"maybe\" for \"--json\" flag: strconv.ParseBool: parsing \"maybe\": invalid syntax");
  CHECK(error_of({"grp", "run", "a", "---x"}) == "bad flag syntax: ---x");
  CHECK(error_of({"bogus"}) == "unknown command \"bogus\" for \"tool\"");
  CHECK(error_of({"grp", "bogus"}) == "");  // a group prints its help instead
  // cobra's Find treats a flag it does not know as taking the next word: "run" is skipped.
  CHECK(error_of({"grp", "--json", "run", "N"}) == "unknown flag: --json");
}

TEST_CASE("help: cobra's layout, hidden commands and flags left out") {
  seen s;
  auto t = tree(s);
  const command& grp = *t->children()[0];
  CHECK(grp.help() ==
        "A group.\n\nUsage:\n  tool grp [command]\n\nAvailable Commands:\n"
        "  run         Run one.\n\nFlags:\n  -h, --help   help for grp\n\n"
        "Use \"tool grp [command] --help\" for more information about a command.\n");
  CHECK(grp.children()[0]->help() ==
        "Run one.\n\nUsage:\n  tool grp run NAME [flags]\n\nFlags:\n"
        "  -h, --help              help for run\n"
        "      --json              As JSON.\n"
        "      --limit int         How many. (default 10)\n"
        "      --tag stringArray   Tags.\n"
        "  -t, --to string         Where to.\n");
}

TEST_CASE("the help JSON is the checked-in copy, byte for byte") {
  std::ifstream in(AGENT_CLI_HELP_JSON, std::ios::binary);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string json = make_root_command()->help_json();
  CHECK(json == ss.str());
  // The keys the agent backend relies on, and the prompt commands next to note.
  for (const char* key :
       {"\"config\"", "\"config manifest\"", "\"config skills pull\"", "\"config files pull\"",
        "\"config note pull\"", "\"config note push\"", "\"config env push\"", "\"config files push\"",
        "\"config files delete\"", "\"config skills push\"", "\"config skills delete\"", "\"file upload\"",
        "\"file download\"", "\"file public-url\"", "\"config prompt pull\"", "\"config prompt push\""})
    CHECK(json.find(std::string(key) + ": ") != std::string::npos);
  for (const char* hidden : {"home-snapshot", "\"drive", "\"config skill ", "\"config file "})
    CHECK(json.find(hidden) == std::string::npos);
}
