#include "gpuslice/cdi/annotations.hpp"
#include "gpuslice/cdi/names.hpp"
#include "gpuslice/common/error.hpp"

#include <catch2/catch.hpp>

using namespace gpuslice;
using namespace gpuslice::cdi;

TEST_CASE("vendor and class names", "[cdi][names]") {
  struct Row {
    const char *s;
    bool ok;
  };
  for (auto r : {Row{"a", true}, Row{"nvidia.com", true}, Row{"A-b_c.d9", true}, Row{"", false}, Row{"9abc", false},
                 Row{"abc-", false}, Row{"a/b", false}, Row{"a b", false}, Row{"_a", false}, Row{"a.", false}}) {
    CAPTURE(r.s);
    CHECK(check_vendor(r.s).empty() == r.ok);
    CHECK(check_class(r.s).empty() == r.ok);
  }
}

TEST_CASE("device names", "[cdi][names]") {
  struct Row {
    const char *s;
    bool ok;
  };
  for (auto r : {Row{"0", true}, Row{"gpu0", true}, Row{"GPU-1234:mig.1_2", true}, Row{"a", true}, Row{"", false},
                 Row{"-a", false}, Row{"a:", false}, Row{"a/b", false}, Row{"a=b", false}, Row{"a b", false}}) {
    CAPTURE(r.s);
    CHECK(check_device_name(r.s).empty() == r.ok);
  }
}

TEST_CASE("qualified names parse, build and reject", "[cdi][names]") {
  auto q = parse_qualified_name("nvidia.com/gpu=GPU-1:0");
  CHECK(q.vendor == "nvidia.com");
  CHECK(q.klass == "gpu");
  CHECK(q.name == "GPU-1:0");
  // Split on the first '=': the rest is the name, and '=' is invalid in it.
  CHECK_THROWS_WITH(parse_qualified_name("nvidia.com/gpu=a=b"), Catch::Contains("invalid character"));
  CHECK(parse_qualified_name("v/c=n").str() == "v/c=n");
  // The kind splits on the first '/': the class "b.c/d" is invalid.
  CHECK_THROWS_WITH(parse_qualified_name("a/b.c/d=x"), Catch::Contains("class \"b.c/d\""));
  for (const char *bad : {"", "gpu0", "nvidia.com/gpu", "nvidia.com=gpu0", "/gpu=0", "nvidia.com/=0", "nvidia.com/gpu=",
                          "1vendor/gpu=0", "nvidia.com/gpu=0 "}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_qualified_name(bad), Error);
  }
  CHECK(qualified_name("v", "c", "n") == "v/c=n");
  CHECK_THROWS_AS(qualified_name("v", "c", "-n"), Error);
  CHECK(is_qualified_name("a/b=c"));
  CHECK_FALSE(is_qualified_name("/dev/nvidia0"));
  CHECK_FALSE(is_qualified_name("a/b="));
}

TEST_CASE("annotation keys and values", "[cdi][annotations]") {
  CHECK(annotation_key("dra.example.com", "claim/uid-1") == "cdi.k8s.io/dra.example.com_claim_uid-1");
  CHECK_THROWS_WITH(annotation_key(std::string(60, 'p'), "dev"), Catch::Contains("63"));
  CHECK(annotation_key(std::string(59, 'p'), "dev").size() == std::string("cdi.k8s.io/").size() + 63);
  CHECK_THROWS_AS(annotation_key("plugin", "dev-"), Error);
  CHECK_THROWS_AS(annotation_key("plug in", "dev"), Error);
  CHECK(annotation_value({"a/b=0", "a/b=1"}) == "a/b=0,a/b=1");
  CHECK_THROWS_AS(annotation_value({"a/b=0", "junk"}), Error);
}

TEST_CASE("annotations parse in key order without duplicates", "[cdi][annotations]") {
  Annotations a{{"cdi.k8s.io/z_plugin", "v/c=2"},
                {"cdi.k8s.io/a_plugin", "v/c=1,v/c=2"},
                {"other.io/x", "not a device"},
                {"gpuslice.io/extra", "v/c=3"}};
  CHECK(parse_annotations(a) == std::vector<std::string>{"v/c=1", "v/c=2"});
  CHECK(parse_annotations(a, {"cdi.k8s.io/", "gpuslice.io/"}) == std::vector<std::string>{"v/c=1", "v/c=2", "v/c=3"});
  // No trimming: a space makes the name invalid, and the key is named.
  Annotations bad{{"cdi.k8s.io/p_d", "v/c=1, v/c=2"}};
  CHECK_THROWS_WITH(parse_annotations(bad), Catch::Contains("cdi.k8s.io/p_d"));
  Annotations empty_value{{"cdi.k8s.io/p_d", ""}};
  CHECK_THROWS_AS(parse_annotations(empty_value), Error);
}
