// Special functions: see special.h. The approximations follow the Cephes
// Mathematics Library (Stephen L. Moshier), whose coefficient tables PyTorch's
// CPU kernels use too, so results agree to rounding.
#include "lowering/special.h"

#include <cmath>

namespace torch_tpu::lower::special {

namespace {

// A value with its graph, so formulas read like the math.
struct X {
  Graph* g;
  Value v;
};
X wrap(Graph& g, Value v) { return {&g, v}; }
X lit(const X& like, const c10::Scalar& c) { return {like.g, constant_like(*like.g, like.v, c)}; }
X bin(const char* op, X a, X b) { return {a.g, binary(*a.g, op, a.v, b.v)}; }
X operator+(X a, X b) { return bin("add", a, b); }
X operator-(X a, X b) { return bin("subtract", a, b); }
X operator*(X a, X b) { return bin("multiply", a, b); }
X operator/(X a, X b) { return bin("divide", a, b); }
X operator+(X a, double b) { return a + lit(a, b); }
X operator-(X a, double b) { return a - lit(a, b); }
X operator*(X a, double b) { return a * lit(a, b); }
X operator/(X a, double b) { return a / lit(a, b); }
X operator+(double a, X b) { return lit(b, a) + b; }
X operator-(double a, X b) { return lit(b, a) - b; }
X operator*(double a, X b) { return lit(b, a) * b; }
X operator/(double a, X b) { return lit(b, a) / b; }
X operator-(X a) { return {a.g, unary(*a.g, "negate", a.v)}; }
X fn(const char* op, X a) { return {a.g, unary(*a.g, op, a.v)}; }
X exp(X a) { return fn("exponential", a); }
X log(X a) { return fn("log", a); }
X sqrt(X a) { return fn("sqrt", a); }
X sin(X a) { return fn("sine", a); }
X cos(X a) { return fn("cosine", a); }
X abs(X a) { return fn("abs", a); }
X chlo_fn(const char* op, X a) { return {a.g, a.g->add(std::string("chlo.") + op, {a.v}, a.g->type(a.v))}; }
X cmp(X a, X b, const char* dir) { return {a.g, compare(*a.g, a.v, b.v, dir, a.g->type(a.v).dtype)}; }
X cmp(X a, double b, const char* dir) { return cmp(a, lit(a, b), dir); }
X operator&&(X a, X b) { return bin("and", a, b); }
X operator||(X a, X b) { return bin("or", a, b); }
X operator!(X a) { return fn("not", a); }
X where(X cond, X a, X b) { return {a.g, select(*a.g, cond.v, a.v, b.v)}; }
X where(X cond, double a, X b) { return where(cond, lit(b, a), b); }
X where(X cond, X a, double b) { return where(cond, a, lit(a, b)); }

// Horner's rule over every entry: c[0] is the highest power's coefficient
// (Cephes polevl with the table's full length, no implicit leading 1).
template <size_t N>
X polevl(X x, const double (&c)[N]) {
  X r = lit(x, c[0]);
  for (size_t i = 1; i < N; ++i) r = r * x + c[i];
  return r;
}
// Clenshaw's recurrence for a Chebyshev series (Cephes chbevl) over the last
// `terms` coefficients of c (all of them by default).
template <size_t N>
X chbevl(X x, const double (&c)[N], size_t terms = N) {
  const double* t = c + (N - terms);
  X b0 = lit(x, t[0]), b1 = lit(x, 0), b2 = lit(x, 0);
  for (size_t i = 1; i < terms; ++i) {
    b2 = b1;
    b1 = b0;
    b0 = x * b1 - b2 + t[i];
  }
  return (b0 - b2) * 0.5;
}
bool is_double(X x) { return x.g->type(x.v).dtype == c10::kDouble; }
X is_inf(X x) { return cmp(abs(x), lit(x, INFINITY), "EQ"); }
X nan_like(X x) { return lit(x, NAN); }

// Cephes coefficient tables (as in PyTorch's Math.h).
constexpr double kI0eA[] = {
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1
};
constexpr double kI0eB[] = {
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1
};
constexpr double kI1eA[] = {
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
    4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
    2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1
};
constexpr double kI1eB[] = {
    7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1
};
constexpr double kK0A[] = {
    +1.37446543561352307156e-16, +4.25981614279661018399e-14, +1.03496952576338420167e-11,
    +1.90451637722020886025e-09, +2.53479107902614945675e-07, +2.28621210311945178607e-05,
    +1.26461541144692592338e-03, +3.59799365153615016266e-02, +3.44289899924628486886e-01,
    -5.35327393233902768720e-01
};
constexpr double kK0B[] = {
    +5.30043377268626276149e-18, -1.64758043015242134646e-17, +5.21039150503902756861e-17,
    -1.67823109680541210385e-16, +5.51205597852431940784e-16, -1.84859337734377901440e-15,
    +6.34007647740507060557e-15, -2.22751332699166985548e-14, +8.03289077536357521100e-14,
    -2.98009692317273043925e-13, +1.14034058820847496303e-12, -4.51459788337394416547e-12,
    +1.85594911495471785253e-11, -7.95748924447710747776e-11, +3.57739728140030116597e-10,
    -1.69753450938905987466e-09, +8.57403401741422608519e-09, -4.66048989768794782956e-08,
    +2.76681363944501510342e-07, -1.83175552271911948767e-06, +1.39498137188764993662e-05,
    -1.28495495816278026384e-04, +1.56988388573005337491e-03, -3.14481013119645005427e-02,
    +2.44030308206595545468e+00
};
constexpr double kK1A[] = {
    -7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
    -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
    -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
    -3.53155960776544875667e-01, +1.52530022733894777053e+00
};
constexpr double kK1B[] = {
    -5.75674448366501715755e-18, +1.79405087314755922667e-17, -5.68946255844285935196e-17,
    +1.83809354436663880070e-16, -6.05704724837331885336e-16, +2.03870316562433424052e-15,
    -7.01983709041831346144e-15, +2.47715442448130437068e-14, -8.97670518232499435011e-14,
    +3.34841966607842919884e-13, -1.28917396095102890680e-12, +5.13963967348173025100e-12,
    -2.12996783842756842877e-11, +9.21831518760500529508e-11, -4.19035475934189648750e-10,
    +2.01504975519703286596e-09, -1.03457624656780970260e-08, +5.74108412545004946722e-08,
    -3.50196060308781257119e-07, +2.40648494783721712015e-06, -1.93619797416608296024e-05,
    +1.95215518471351631108e-04, -2.85781685962277938680e-03, +1.03923736576817238437e-01,
    +2.72062619048444266945e+00
};
constexpr double kJ0PP[] = {
    +7.96936729297347051624e-04, +8.28352392107440799803e-02, +1.23953371646414299388e+00,
    +5.44725003058768775090e+00, +8.74716500199817011941e+00, +5.30324038235394892183e+00,
    +9.99999999999999997821e-01
};
constexpr double kJ0PQ[] = {
    +9.24408810558863637013e-04, +8.56288474354474431428e-02, +1.25352743901058953537e+00,
    +5.47097740330417105182e+00, +8.76190883237069594232e+00, +5.30605288235394617618e+00,
    +1.00000000000000000218e+00
};
constexpr double kJ0QP[] = {
    -1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
    -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
    -5.14105326766599330220e+01, -6.05014350600728481186e+00
};
constexpr double kJ0QQ[] = {
    +6.43178256118178023184e+01, +8.56430025976980587198e+02, +3.88240183605401609683e+03,
    +7.24046774195652478189e+03, +5.93072701187316984827e+03, +2.06209331660327847417e+03,
    +2.42005740240291393179e+02
};
constexpr double kJ0RP[] = {
    -4.79443220978201773821e+09, +1.95617491946556577543e+12, -2.49248344360967716204e+14,
    +9.70862251047306323952e+15
};
constexpr double kJ0RQ[] = {
    +4.99563147152651017219e+02, +1.73785401676374683123e+05, +4.84409658339962045305e+07,
    +1.11855537045356834862e+10, +2.11277520115489217587e+12, +3.10518229857422583814e+14,
    +3.18121955943204943306e+16, +1.71086294081043136091e+18
};
constexpr double kJ1PP[] = {
    +7.62125616208173112003e-04, +7.31397056940917570436e-02, +1.12719608129684925192e+00,
    +5.11207951146807644818e+00, +8.42404590141772420927e+00, +5.21451598682361504063e+00,
    +1.00000000000000000254e+00
};
constexpr double kJ1PQ[] = {
    +5.71323128072548699714e-04, +6.88455908754495404082e-02, +1.10514232634061696926e+00,
    +5.07386386128601488557e+00, +8.39985554327604159757e+00, +5.20982848682361821619e+00,
    +9.99999999999999997461e-01
};
constexpr double kJ1QP[] = {
    +5.10862594750176621635e-02, +4.98213872951233449420e+00, +7.58238284132545283818e+01,
    +3.66779609360150777800e+02, +7.10856304998926107277e+02, +5.97489612400613639965e+02,
    +2.11688757100572135698e+02, +2.52070205858023719784e+01
};
constexpr double kJ1QQ[] = {
    +7.42373277035675149943e+01, +1.05644886038262816351e+03, +4.98641058337653607651e+03,
    +9.56231892404756170795e+03, +7.99704160447350683650e+03, +2.82619278517639096600e+03,
    +3.36093607810698293419e+02
};
constexpr double kJ1RP[] = {
    -8.99971225705559398224e+08, +4.52228297998194034323e+11, -7.27494245221818276015e+13,
    +3.68295732863852883286e+15
};
constexpr double kJ1RQ[] = {
    +6.20836478118054335476e+02, +2.56987256757748830383e+05, +8.35146791431949253037e+07,
    +2.21511595479792499675e+10, +4.74914122079991414898e+12, +7.84369607876235854894e+14,
    +8.95222336184627338078e+16, +5.32278620332680085395e+18
};
constexpr double kY0YP[] = {
    +1.55924367855235737965e+04, -1.46639295903971606143e+07, +5.43526477051876500413e+09,
    -9.82136065717911466409e+11, +8.75906394395366999549e+13, -3.46628303384729719441e+15,
    +4.42733268572569800351e+16, -1.84950800436986690637e+16
};
constexpr double kY0YQ[] = {
    +1.04128353664259848412e+03, +6.26107330137134956842e+05, +2.68919633393814121987e+08,
    +8.64002487103935000337e+10, +2.02979612750105546709e+13, +3.17157752842975028269e+15,
    +2.50596256172653059228e+17
};
constexpr double kY1YP[] = {
    +1.26320474790178026440e+09, -6.47355876379160291031e+11, +1.14509511541823727583e+14,
    -8.12770255501325109621e+15, +2.02439475713594898196e+17, -7.78877196265950026825e+17
};
constexpr double kY1YQ[] = {
    +5.94301592346128195359e+02, +2.35564092943068577943e+05, +7.34811944459721705660e+07,
    +1.87601316108706159478e+10, +3.88231277496238566008e+12, +6.20557727146953693363e+14,
    +6.87141087355300489866e+16, +3.97270608116560655612e+18
};
constexpr double kNdtriP0[] = {
    -5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1, 1.39312609387279679503E1,
    -1.23916583867381258016E0
};
constexpr double kNdtriQ0[] = {
    1.00000000000000000000E0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
    -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1, 1.59056225126211695515E1,
    -1.18331621121330003142E0
};
constexpr double kNdtriP1[] = {
    4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1, 4.40805073893200834700E1,
    1.46849561928858024014E1, 2.18663306850790267539E0, -1.40256079171354495875E-1,
    -3.50424626827848203418E-2, -8.57456785154685413611E-4
};
constexpr double kNdtriQ1[] = {
    1.00000000000000000000E0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
    1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
    -3.80806407691578277194E-2, -9.33259480895457427372E-4
};
constexpr double kNdtriP2[] = {
    3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0, 1.33303460815807542389E0,
    2.01485389549179081538E-1, 1.23716634817820021358E-2, 3.01581553508235416007E-4,
    2.65806974686737550832E-6, 6.23974539184983293730E-9
};
constexpr double kNdtriQ2[] = {
    1.00000000000000000000E0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
    2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
    2.89247864745380683936E-6, 6.79019408009981274425E-9
};
constexpr double kAiryAN[] = {
    +3.46538101525629032477e-01, +1.20075952739645805542e+01, +7.62796053615234516538e+01,
    +1.68089224934630576269e+02, +1.59756391350164413639e+02, +7.05360906840444183113e+01,
    +1.40264691163389668864e+01, +9.99999999999999995305e-01
};
constexpr double kAiryAD[] = {
    +5.67594532638770212846e-01, +1.47562562584847203173e+01, +8.45138970141474626562e+01,
    +1.77318088145400459522e+02, +1.64234692871529701831e+02, +7.14778400825575695274e+01,
    +1.40959135607834029598e+01, +1.00000000000000000470e+00
};
constexpr double kAiryAFN[] = {
    -1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
    -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
    -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08
};
constexpr double kAiryAFD[] = {
    +1.33560420706553243746e+01, +3.26825032795224613948e+01, +2.67367040941499554804e+01,
    +9.18707402907259625840e+00, +1.47529146771666414581e+00, +1.15687173795188044134e-01,
    +4.40291641615211203805e-03, +7.54720348287414296618e-05, +4.51850092970580378464e-07
};
constexpr double kAiryAGN[] = {
    +1.97339932091685679179e-02, +3.91103029615688277255e-01, +1.06579897599595591108e+00,
    +9.39169229816650230044e-01, +3.51465656105547619242e-01, +6.33888919628925490927e-02,
    +5.85804113048388458567e-03, +2.82851600836737019778e-04, +6.98793669997260967291e-06,
    +8.11789239554389293311e-08, +3.41551784765923618484e-10
};
constexpr double kAiryAGD[] = {
    +9.30892908077441974853e+00, +1.98352928718312140417e+01, +1.55646628932864612953e+01,
    +5.47686069422975497931e+00, +9.54293611618961883998e-01, +8.64580826352392193095e-02,
    +4.12656523824222607191e-03, +1.01259085116509135510e-04, +1.17166733214413521882e-06,
    +4.91834570062930015649e-09
};

constexpr double kPiOver4 = 0.785398163397448309615660845819875721;
constexpr double kThreePiOver4 = 2.356194490192344928846982537459627163;
constexpr double kSqrt2OverPi = 0.797884560802865355879892119868763737;
constexpr double kTwoOverPi = 0.636619772367581343075535053490057448;
constexpr double kInvSqrtPi = 0.56418958354775628694807945156;

// exp(|x|) * I0(x) pieces: the Chebyshev series on [0, 8] and beyond.
X i0e_of(X ax) {
  return where(cmp(ax, 8.0, "LE"), chbevl(ax / 2.0 - 2.0, kI0eA), chbevl(32.0 / ax - 2.0, kI0eB) / sqrt(ax));
}
X i0_of(X x) {
  X ax = abs(x);
  return where(cmp(ax, 8.0, "LE"), exp(ax) * chbevl(ax / 2.0 - 2.0, kI0eA),
               exp(ax) * chbevl(32.0 / ax - 2.0, kI0eB) / sqrt(ax));
}
// I1 with the full tables (modified_bessel_i1; calc_i1 in double).
X i1_full(X x) {
  X ax = abs(x);
  X r = where(cmp(ax, 8.0, "LE"), chbevl(ax / 2.0 - 2.0, kI1eA) * ax * exp(ax),
              exp(ax) * chbevl(32.0 / ax - 2.0, kI1eB) / sqrt(ax));
  return where(cmp(x, 0.0, "LT"), -r, r);
}

X j0_of(X x) {
  X ax = abs(x), z = ax * ax;
  X small = (z - 5.78318596294678452118e+00) * (z - 3.04712623436620863991e+01) * polevl(z, kJ0RP) / polevl(z, kJ0RQ);
  small = where(cmp(ax, 0.00001, "LT"), 1.0 - z / 4.0, small);
  X w = 25.0 / z;
  X big = (polevl(w, kJ0PP) / polevl(w, kJ0PQ) * cos(ax - kPiOver4) -
           5.0 / ax * (polevl(w, kJ0QP) / polevl(w, kJ0QQ)) * sin(ax - kPiOver4)) *
          kSqrt2OverPi / sqrt(ax);
  return where(cmp(ax, 5.0, "LE"), small, big);
}
X j1_of(X x) {
  X ax = abs(x), z = ax * ax;
  X small = polevl(z, kJ1RP) / polevl(z, kJ1RQ) * ax * (z - 1.46819706421238932572e+01) *
            (z - 4.92184563216946036703e+01);
  X w = (5.0 / ax) * (5.0 / ax);
  X big = (polevl(w, kJ1PP) / polevl(w, kJ1PQ) * cos(ax - kThreePiOver4) -
           5.0 / ax * (polevl(w, kJ1QP) / polevl(w, kJ1QQ)) * sin(ax - kThreePiOver4)) *
          kSqrt2OverPi / sqrt(ax);
  X r = where(cmp(ax, 5.0, "LE"), small, big);
  return where(cmp(x, 0.0, "LT"), -r, r);
}

// erfcx for x >= 0: exp(x^2) erfc(x) while exp(x^2) is finite and accurate,
// then the asymptotic series 1/(x sqrt(pi)) * sum (-1)^k (2k-1)!! / (2x^2)^k.
X erfcx_nonnegative(X x) {
  X direct = exp(x * x) * chlo_fn("erfc", x);
  X u = 1.0 / (2.0 * x * x);
  X sum = lit(x, 1), term = lit(x, 1);
  for (int k = 1; k <= 8; ++k) {
    term = term * u * static_cast<double>(-(2 * k - 1));
    sum = sum + term;
  }
  X asymptotic = kInvSqrtPi / x * sum;
  return where(cmp(x, is_double(x) ? 25.0 : 5.0, "LT"), direct, asymptotic);
}

}  // namespace

Value i0(Graph& g, Value x) { return i0_of(wrap(g, x)).v; }
Value i0e(Graph& g, Value x) { return i0e_of(abs(wrap(g, x))).v; }

Value i1(Graph& g, Value xv) {
  X x = wrap(g, xv);
  if (is_double(x)) return i1_full(x).v;
  // calc_i1 in float uses only the last 17 and 7 terms of the tables.
  X ax = abs(x);
  X r = where(cmp(ax, 8.0, "LE"), exp(ax) * ax * chbevl(ax / 2.0 - 2.0, kI1eA, 17),
              exp(ax) * chbevl(32.0 / ax - 2.0, kI1eB, 7) / sqrt(ax));
  return where(cmp(x, 0.0, "LT"), -r, r).v;
}
Value modified_bessel_i1(Graph& g, Value x) { return i1_full(wrap(g, x)).v; }

Value modified_bessel_k0(Graph& g, Value xv, bool scaled) {
  X x = wrap(g, xv);
  X small = chbevl(x * x - 2.0, kK0A) - log(x * 0.5) * i0_of(x);
  X big = chbevl(8.0 / x - 2.0, kK0B) / sqrt(x);
  X r = scaled ? where(cmp(x, 2.0, "LE"), small * exp(x), big) : where(cmp(x, 2.0, "LE"), small, exp(-x) * big);
  r = where(cmp(x, 0.0, "LT"), nan_like(x), r);
  return where(cmp(x, 0.0, "EQ"), lit(x, INFINITY), r).v;
}
Value modified_bessel_k1(Graph& g, Value xv, bool scaled) {
  X x = wrap(g, xv);
  X small = log(x * 0.5) * i1_full(x) + chbevl(x * x - 2.0, kK1A) / x;
  X big = chbevl(8.0 / x - 2.0, kK1B) / sqrt(x);
  X r = scaled ? where(cmp(x, 2.0, "LE"), small * exp(x), big) : where(cmp(x, 2.0, "LE"), small, exp(-x) * big);
  r = where(cmp(x, 0.0, "LT"), nan_like(x), r);
  return where(cmp(x, 0.0, "EQ"), lit(x, INFINITY), r).v;
}

Value bessel_j0(Graph& g, Value x) { return j0_of(wrap(g, x)).v; }
Value bessel_j1(Graph& g, Value x) { return j1_of(wrap(g, x)).v; }

Value bessel_y0(Graph& g, Value xv) {
  X x = wrap(g, xv), z = x * x;
  X small = polevl(z, kY0YP) / polevl(z, kY0YQ) + kTwoOverPi * log(x) * j0_of(x);
  X w = 25.0 / z;
  X big = (polevl(w, kJ0PP) / polevl(w, kJ0PQ) * sin(x - kPiOver4) +
           5.0 / x * (polevl(w, kJ0QP) / polevl(w, kJ0QQ)) * cos(x - kPiOver4)) *
          kSqrt2OverPi / sqrt(x);
  X r = where(cmp(x, 5.0, "LE"), small, big);
  r = where(cmp(x, 0.0, "LT"), nan_like(x), r);
  return where(cmp(x, 0.0, "EQ"), lit(x, -INFINITY), r).v;
}
Value bessel_y1(Graph& g, Value xv) {
  X x = wrap(g, xv), z = x * x;
  X small = x * (polevl(z, kY1YP) / polevl(z, kY1YQ)) + kTwoOverPi * (j1_of(x) * log(x) - 1.0 / x);
  X w = (5.0 / x) * (5.0 / x);
  X big = (polevl(w, kJ1PP) / polevl(w, kJ1PQ) * sin(x - kThreePiOver4) +
           5.0 / x * (polevl(w, kJ1QP) / polevl(w, kJ1QQ)) * cos(x - kThreePiOver4)) *
          kSqrt2OverPi / sqrt(x);
  X r = where(cmp(x, 5.0, "LE"), small, big);
  r = where(cmp(x, 0.0, "LT"), nan_like(x), r);
  return where(cmp(x, 0.0, "EQ"), lit(x, -INFINITY), r).v;
}

Value spherical_bessel_j0(Graph& g, Value xv) {
  X x = wrap(g, xv), z = x * x;
  X series = 1.0 + z * (-1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5040.0 + z * (1.0 / 362880.0 +
                 z * (-1.0 / 39916800.0 + z * (1.0 / 6227020800.0))))));
  X r = where(cmp(abs(x), 0.5, "LT"), series, sin(x) / x);
  return where(is_inf(x), 0.0, r).v;
}

Value ndtri(Graph& g, Value pv) {
  X p = wrap(g, pv);
  constexpr double kExpMinus2 = 0.13533528323661269189;
  X upper = cmp(p, 1.0 - kExpMinus2, "GT");
  X y = where(upper, 1.0 - p, p);
  X c = y - 0.5, c2 = c * c;
  X central = (c + c * (c2 * polevl(c2, kNdtriP0) / polevl(c2, kNdtriQ0))) * 2.50662827463100050242E0;
  X t = sqrt(-2.0 * log(y));
  X z = 1.0 / t;
  X correction = where(cmp(t, 8.0, "LT"), z * polevl(z, kNdtriP1) / polevl(z, kNdtriQ1),
                       z * polevl(z, kNdtriP2) / polevl(z, kNdtriQ2));
  X tail = t - log(t) / t - correction;
  X r = where(cmp(y, kExpMinus2, "GT"), central, where(upper, tail, -tail));
  r = where(cmp(p, 0.0, "LT") || cmp(p, 1.0, "GT"), nan_like(p), r);
  r = where(cmp(p, 0.0, "EQ"), lit(p, -INFINITY), r);
  return where(cmp(p, 1.0, "EQ"), lit(p, INFINITY), r).v;
}

Value erfcx(Graph& g, Value xv) {
  X x = wrap(g, xv);
  X positive = erfcx_nonnegative(abs(x));
  return where(cmp(x, 0.0, "LT"), 2.0 * exp(x * x) - positive, positive).v;
}

Value log_ndtr(Graph& g, Value xv) {
  X x = wrap(g, xv);
  X t = x * 0.707106781186547524400844362104849;
  X lower = log(wrap(g, erfcx(g, (-t).v)) / 2.0) - t * t;
  X upper = fn("log_plus_one", -chlo_fn("erfc", t) / 2.0);
  return where(cmp(x, -1.0, "LT"), lower, upper).v;
}

Value airy_ai(Graph& g, Value xv) {
  X x = wrap(g, xv);
  constexpr double kSqrtPiInv = 5.64189583547756286948e-01;
  // x < -2.09: the oscillating asymptotic expansion.
  X s = sqrt(-x);
  X zeta_neg = -2.0 * x * s / 3.0;
  X z = 1.0 / zeta_neg, zz = z * z;
  X phase = zeta_neg + 0.25 * 3.141592653589793238462643383279502;
  X negative = kSqrtPiInv / sqrt(s) * (sin(phase) * (1.0 + z * z * polevl(zz, kAiryAFN) / polevl(zz, kAiryAFD)) -
                                       cos(phase) * (z * polevl(zz, kAiryAGN) / polevl(zz, kAiryAGD)));
  // x >= 2.09: the decaying asymptotic expansion.
  X zeta = 2.0 * x * sqrt(x) / 3.0;
  X positive = kSqrtPiInv * (polevl(1.0 / zeta, kAiryAN) / polevl(1.0 / zeta, kAiryAD)) /
               (2.0 * sqrt(sqrt(x)) * exp(zeta));
  // Between: the Maclaurin series, summed until a term drops below epsilon.
  double eps = is_double(x) ? 2.220446049250313e-16 : 1.1920928955078125e-07;
  X f = lit(x, 1), gsum = x, m = lit(x, 1), n = x, t = lit(x, 1), cube = x * x * x;
  double k = 1;
  for (int i = 0; i < 12; ++i) {
    X running = cmp(t, eps, "GT");
    X m2 = m * cube / (k + 1);
    X n2 = n * cube / (k + 2);
    m2 = m2 / (k + 2);
    X f2 = f + m2;
    n2 = n2 / (k + 3);
    X g2 = gsum + n2;
    k += 3;
    t = where(running, abs(m2 / f2), t);
    m = where(running, m2, m);
    n = where(running, n2, n);
    f = where(running, f2, f);
    gsum = where(running, g2, gsum);
  }
  X series = 0.355028053887817239260 * f - 0.258819403792806798405 * gsum;
  X r = where(cmp(x, -2.09, "LT"), negative, where(cmp(x, 2.09, "GE"), positive, series));
  r = where(cmp(x, 103.892, "GT"), 0.0, r);
  return where(is_inf(x), nan_like(x), r).v;
}

Value polynomial(Graph& g, Polynomial kind, Value xv, Value nv) {
  const Type t = g.type(xv);
  const bool shifted = kind == Polynomial::ShiftedChebyshevT || kind == Polynomial::ShiftedChebyshevU ||
                       kind == Polynomial::ShiftedChebyshevV || kind == Polynomial::ShiftedChebyshevW;
  const Polynomial base = shifted ? static_cast<Polynomial>(static_cast<int>(kind) - 4) : kind;
  X x0 = wrap(g, xv);
  X x = shifted ? x0 + x0 - 1.0 : x0;  // shifted Chebyshev: P*(x) = P(2x - 1)
  // n truncates toward zero; NaN and infinite n count as negative (the CPU's result, 0).
  X n_float = wrap(g, nv);
  X n = where(cmp(abs(n_float), lit(n_float, INFINITY), "LT"), wrap(g, convert(g, nv, c10::kLong)),
              wrap(g, constant(g, -1, c10::kLong, t.shape)));
  X nf = wrap(g, convert(g, n.v, t.dtype));
  X odd = cmp(wrap(g, binary(g, "remainder", n.v, constant_like(g, n.v, 2))), lit(n, 0), "NE");

  // PyTorch's closed forms and special values, each with where it applies.
  struct Case {
    X applies, value;
  };
  std::vector<Case> cases;  // highest priority first
  cases.push_back({cmp(n, lit(n, 0), "LT"), lit(x, 0)});
  X at_end = cmp(abs(x), 1.0, "EQ");
  X positive = cmp(x, 0.0, "GT");
  X inside = cmp(abs(x), 1.0, "LT");
  X theta = chlo_fn("acos", x);
  const int64_t trig_above = base == Polynomial::ChebyshevT ? 6
                             : shifted                     ? (base == Polynomial::ChebyshevW ? 4 : 6)
                                                           : 8;
  X trig = cmp(n, lit(n, trig_above), "GT") && inside;
  X odd_sign = where(odd, -(nf + nf + 1.0), nf + nf + 1.0);
  X plus_minus_one = where(odd, lit(x, -1), 1.0);
  switch (base) {
    case Polynomial::ChebyshevT:
      cases.push_back({at_end, where(positive || !odd, 1.0, lit(x, -1))});
      cases.push_back({trig, cos(nf * theta)});
      break;
    case Polynomial::ChebyshevU: {
      X s = sin(theta);
      cases.push_back({at_end, where(positive || !odd, nf + 1.0, -(nf + 1.0))});
      cases.push_back({trig, where(cmp(s, 0.0, "NE"), sin((nf + 1.0) * theta) / s,
                                   (nf + 1.0) * cos((nf + 1.0) * theta) / x)});
      break;
    }
    case Polynomial::ChebyshevV:
      cases.push_back({at_end, where(positive, lit(x, 1), odd_sign)});
      cases.push_back({trig, where(cmp(sin(theta * 0.5), 1.0, "NE"), cos((nf + 0.5) * theta) / cos(theta * 0.5),
                                   odd_sign)});
      break;
    case Polynomial::ChebyshevW:
      cases.push_back({at_end, where(positive, nf + nf + 1.0, plus_minus_one)});
      cases.push_back({trig, where(cmp(cos(theta * 0.5), 1.0, "NE"), sin((nf + 0.5) * theta) / sin(theta * 0.5),
                                   where(positive, nf + nf + 1.0, plus_minus_one))});
      break;
    case Polynomial::HermiteH:
    case Polynomial::HermiteHe:
      // The CPU gives up (NaN) beyond these degrees.
      cases.push_back({cmp(n, lit(n, t.dtype == c10::kDouble ? 512 : 128), "GT"), nan_like(x)});
      break;
    case Polynomial::LaguerreL:
      cases.push_back({cmp(abs(x), 0.0, "EQ"), lit(x, 1)});
      break;
    case Polynomial::LegendreP:
      cases.push_back({at_end, where(positive || !odd, 1.0, lit(x, -1))});
      break;
    default:
      break;
  }
  cases.push_back({cmp(n, lit(n, 0), "EQ"), lit(x, 1)});

  // P_1; P_0 = 1 for every family.
  X p1 = x;
  switch (base) {
    case Polynomial::ChebyshevU: case Polynomial::HermiteH: p1 = x + x; break;
    case Polynomial::ChebyshevV: p1 = x + x - 1.0; break;
    case Polynomial::ChebyshevW: p1 = x + x + 1.0; break;
    case Polynomial::LaguerreL: p1 = 1.0 - x; break;
    default: break;
  }
  // P_{k+1} from P_{k-1} (p) and P_k (q), for k = 1 .. n - 1.
  auto next = [base](X k, X x, X p, X q) {
    switch (base) {
      case Polynomial::HermiteH: return (x + x) * q - (k + k) * p;
      case Polynomial::HermiteHe: return x * q - k * p;
      case Polynomial::LaguerreL: return ((k + k + 1.0 - x) * q - k * p) / (k + 1.0);
      case Polynomial::LegendreP: return ((k + k + 1.0) * x * q - k * p) / (k + 1.0);
      default: return (x + x) * q - p;  // every Chebyshev kind
    }
  };
  // The loop runs to the largest n among the elements no case covers.
  X covered = cases[0].applies;
  for (size_t i = 1; i < cases.size(); ++i) covered = covered || cases[i].applies;
  X steps = where(covered, wrap(g, constant(g, 0, c10::kLong, t.shape)), n);
  std::vector<int64_t> all(t.shape.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  Value limit = reduce(g, steps.v, all, ReduceKind::Max);
  auto body = [&](Graph& sub, Value k, const std::vector<Value>& v) {
    X x = wrap(sub, v[0]), n = wrap(sub, v[1]), p = wrap(sub, v[2]), q = wrap(sub, v[3]);
    X kk = wrap(sub, broadcast_in_dim(sub, k, t.shape, {}));
    X active = cmp(kk, n, "LT");
    X r = next(wrap(sub, convert(sub, kk.v, t.dtype)), x, p, q);
    return std::vector<Value>{x.v, n.v, where(active, q, p).v, where(active, r, q).v};
  };
  std::vector<Value> out =
      counted_loop(g, constant(g, 1, c10::kLong), limit, {x.v, steps.v, constant_like(g, xv, 1), p1.v}, body);
  X r = wrap(g, out[3]);
  for (size_t i = cases.size(); i-- > 0;) r = where(cases[i].applies, cases[i].value, r);
  return r.v;
}

}  // namespace torch_tpu::lower::special
