package explain
import ("testing";"fmt";"sort"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver")
func TestDebugPlan(t *testing.T){
 for _,n:=range []int{10000}{
 cat := Catalog{Region: "us-east-1"}
 types,_,_ := cat.instanceTypes()
 m := &snapshot.Manifests{Pods: microservices(1, n)}
 p,_ := Problem(m, types, DefaultPool{InstanceFamilies: []string{"c7i","m7i","r7i"}})
 plan,_ := solver.Solve(p)
 cnt:=map[string]int{}; util:=map[string][3]float64{}
 for _,nd:=range plan.NewNodes{cnt[nd.InstanceType]++; u:=util[nd.InstanceType]; for r:=0;r<3;r++{ x:=r; if r==2 {x=3}; u[r]+=float64(nd.Requested[x])/float64(nd.Allocatable[x])}; util[nd.InstanceType]=u}
 keys:=[]string{}; for k:=range cnt{keys=append(keys,k)}; sort.Strings(keys)
 for _,k:=range keys{fmt.Printf("%s x%d cpu %.2f mem %.2f pods %.2f\n",k,cnt[k],util[k][0]/float64(cnt[k]),util[k][1]/float64(cnt[k]),util[k][2]/float64(cnt[k]))}
 fmt.Println(n, plan.TotalPrice, plan.LowerBound)
 }
}
