// Reads integer expressions (one per line) and prints what Halide's simplifier makes of them.
//
// Input line:   VAR:TYPE:LO:HI ... | SEXPR
//   TYPE is int32, uint32, int64 or uint64; LO and HI are inclusive bounds given to the simplifier.
// SEXPR:        name | 12i32 | 7u32 | 5i64 | 9u64 | true | false
//               | (OP ARG...) with OP one of + - * / % min max << >> & | ^ ~ neg < <= > >= == != && || !
//               | (select C A B) | (cast TYPE A)
// Output line:  the simplified expression in the same S-expression form, or "error: MESSAGE".
// Division and modulus are Halide's (rounding toward negative infinity); the caller only sends
// expressions whose dividends it has proven non-negative, where that equals C's truncation.
#include "Halide.h"

#include <cctype>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace Halide;
using namespace Halide::Internal;

namespace {

Type parse_type(const std::string &name) {
    if (name == "int32") return Int(32);
    if (name == "uint32") return UInt(32);
    if (name == "int64") return Int(64);
    if (name == "uint64") return UInt(64);
    if (name == "bool") return Bool();
    throw std::runtime_error("unknown type " + name);
}

std::string type_name(const Type &t) {
    if (t.is_bool()) return "bool";
    if (t.is_int()) return "int" + std::to_string(t.bits());
    if (t.is_uint()) return "uint" + std::to_string(t.bits());
    throw std::runtime_error("unsupported result type");
}

class Reader {
public:
    Reader(const std::string &text, const std::map<std::string, Type> &vars) : text_(text), vars_(vars) {}

    Expr expr() {
        skip();
        if (pos_ >= text_.size()) throw std::runtime_error("unexpected end of expression");
        if (text_[pos_] == '(') {
            ++pos_;
            std::string op = token();
            Expr result;
            if (op == "select") {
                Expr c = expr(), a = expr(), b = expr();
                result = Select::make(c, a, b);
            } else if (op == "cast") {
                Type t = parse_type(token());
                result = Cast::make(t, expr());
            } else {
                std::vector<Expr> args;
                skip();
                while (pos_ < text_.size() && text_[pos_] != ')') {
                    args.push_back(expr());
                    skip();
                }
                result = apply(op, args);
            }
            skip();
            if (pos_ >= text_.size() || text_[pos_] != ')') throw std::runtime_error("missing )");
            ++pos_;
            return result;
        }
        return atom(token());
    }

private:
    static Expr apply(const std::string &op, const std::vector<Expr> &a) {
        if (a.size() == 1) {
            if (op == "neg") return 0 - a[0];
            if (op == "~") return ~a[0];
            if (op == "!") return Not::make(a[0]);
        }
        if (a.size() != 2) throw std::runtime_error("wrong number of operands for " + op);
        const Expr &x = a[0], &y = a[1];
        if (op == "+") return Add::make(x, y);
        if (op == "-") return Sub::make(x, y);
        if (op == "*") return Mul::make(x, y);
        if (op == "/") return Div::make(x, y);
        if (op == "%") return Mod::make(x, y);
        if (op == "min") return Min::make(x, y);
        if (op == "max") return Max::make(x, y);
        if (op == "<<") return x << y;
        if (op == ">>") return x >> y;
        if (op == "&") return x & y;
        if (op == "|") return x | y;
        if (op == "^") return x ^ y;
        if (op == "<") return LT::make(x, y);
        if (op == "<=") return LE::make(x, y);
        if (op == ">") return GT::make(x, y);
        if (op == ">=") return GE::make(x, y);
        if (op == "==") return EQ::make(x, y);
        if (op == "!=") return NE::make(x, y);
        if (op == "&&") return And::make(x, y);
        if (op == "||") return Or::make(x, y);
        throw std::runtime_error("unknown operator " + op);
    }

    Expr atom(const std::string &t) {
        if (t == "true") return const_true();
        if (t == "false") return const_false();
        if (!t.empty() && (std::isdigit((unsigned char)t[0]) || t[0] == '-')) {
            size_t split = t.find_first_of("iu");
            if (split == std::string::npos) throw std::runtime_error("untyped constant " + t);
            std::string digits = t.substr(0, split), suffix = t.substr(split);
            if (suffix == "i32") return make_const(Int(32), (int64_t)std::stoll(digits));
            if (suffix == "i64") return make_const(Int(64), (int64_t)std::stoll(digits));
            if (suffix == "u32") return make_const(UInt(32), (uint64_t)std::stoull(digits));
            if (suffix == "u64") return make_const(UInt(64), (uint64_t)std::stoull(digits));
            throw std::runtime_error("bad constant " + t);
        }
        auto found = vars_.find(t);
        if (found == vars_.end()) throw std::runtime_error("undeclared variable " + t);
        return Variable::make(found->second, t);
    }

    void skip() {
        while (pos_ < text_.size() && std::isspace((unsigned char)text_[pos_])) ++pos_;
    }

    std::string token() {
        skip();
        size_t start = pos_;
        while (pos_ < text_.size() && !std::isspace((unsigned char)text_[pos_]) && text_[pos_] != '(' && text_[pos_] != ')')
            ++pos_;
        if (start == pos_) throw std::runtime_error("expected a token");
        return text_.substr(start, pos_ - start);
    }

    std::string text_;
    size_t pos_ = 0;
    const std::map<std::string, Type> &vars_;
};

std::string constant(const Type &t, const std::string &digits) {
    std::string suffix = (t.is_int() ? "i" : "u") + std::to_string(t.bits());
    return digits + suffix;
}

// Prints Halide IR back in the S-expression form.
std::string print(const Expr &e) {
    if (const auto *v = e.as<Variable>()) return v->name;
    if (const auto *i = e.as<IntImm>()) {
        if (i->type.is_bool()) return i->value ? "true" : "false";
        return constant(i->type, std::to_string(i->value));
    }
    if (const auto *u = e.as<UIntImm>()) {
        if (u->type.is_bool()) return u->value ? "true" : "false";
        return constant(u->type, std::to_string(u->value));
    }
    auto bin = [](const char *op, const Expr &a, const Expr &b) {
        return std::string("(") + op + " " + print(a) + " " + print(b) + ")";
    };
    if (const auto *n = e.as<Add>()) return bin("+", n->a, n->b);
    if (const auto *n = e.as<Sub>()) return bin("-", n->a, n->b);
    if (const auto *n = e.as<Mul>()) return bin("*", n->a, n->b);
    if (const auto *n = e.as<Div>()) return bin("/", n->a, n->b);
    if (const auto *n = e.as<Mod>()) return bin("%", n->a, n->b);
    if (const auto *n = e.as<Min>()) return bin("min", n->a, n->b);
    if (const auto *n = e.as<Max>()) return bin("max", n->a, n->b);
    if (const auto *n = e.as<LT>()) return bin("<", n->a, n->b);
    if (const auto *n = e.as<LE>()) return bin("<=", n->a, n->b);
    if (const auto *n = e.as<GT>()) return bin(">", n->a, n->b);
    if (const auto *n = e.as<GE>()) return bin(">=", n->a, n->b);
    if (const auto *n = e.as<EQ>()) return bin("==", n->a, n->b);
    if (const auto *n = e.as<NE>()) return bin("!=", n->a, n->b);
    if (const auto *n = e.as<And>()) return bin("&&", n->a, n->b);
    if (const auto *n = e.as<Or>()) return bin("||", n->a, n->b);
    if (const auto *n = e.as<Not>()) return "(! " + print(n->a) + ")";
    if (const auto *n = e.as<Select>())
        return "(select " + print(n->condition) + " " + print(n->true_value) + " " + print(n->false_value) + ")";
    if (const auto *n = e.as<Cast>()) return "(cast " + type_name(n->type) + " " + print(n->value) + ")";
    if (const auto *n = e.as<Let>()) return "(let " + n->name + " " + print(n->value) + " " + print(n->body) + ")";
    if (const auto *c = e.as<Call>()) {
        static const std::map<Call::IntrinsicOp, std::string> names = {
            {Call::shift_left, "<<"}, {Call::shift_right, ">>"}, {Call::bitwise_and, "&"},
            {Call::bitwise_or, "|"}, {Call::bitwise_xor, "^"}, {Call::bitwise_not, "~"},
        };
        for (const auto &entry : names) {
            if (c->is_intrinsic(entry.first)) {
                std::string out = "(" + entry.second;
                for (const Expr &arg : c->args) out += " " + print(arg);
                return out + ")";
            }
        }
        throw std::runtime_error("unsupported call " + c->name);
    }
    std::ostringstream text;
    text << e;
    throw std::runtime_error("unsupported node " + text.str());
}

}  // namespace

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        try {
            size_t bar = line.find('|');
            if (bar == std::string::npos) throw std::runtime_error("missing '|'");
            std::istringstream decls(line.substr(0, bar));
            std::map<std::string, Type> vars;
            Scope<Interval> bounds;
            std::string decl;
            while (decls >> decl) {
                std::istringstream parts(decl);
                std::string name, type, lo, hi;
                std::getline(parts, name, ':');
                std::getline(parts, type, ':');
                std::getline(parts, lo, ':');
                std::getline(parts, hi, ':');
                Type t = parse_type(type);
                vars[name] = t;
                bounds.push(name, Interval(make_const(t, (int64_t)std::stoll(lo)), make_const(t, (int64_t)std::stoll(hi))));
            }
            Expr e = Reader(line.substr(bar + 1), vars).expr();
            std::cout << print(simplify(e, true, bounds)) << std::endl;
        } catch (const std::exception &error) {
            std::cout << "error: " << error.what() << std::endl;
        }
    }
    return 0;
}
